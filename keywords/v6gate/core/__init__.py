"""The check framework: registry, verdicts, the per-check context and the runner."""
