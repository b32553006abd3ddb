"""Check modules, one per area.  Every module here is imported by
``v6gate.core.check.load_all``; a check joins the runs, the reports and the
controls as soon as it is declared with ``@check``."""
