"""Report writers: results.json (the source of truth), JUnit XML and a
single-file HTML report, all written from the same document."""
