"""The analysis steps of ``evaluate``, one module each, run in this order on the reduced bags.

Each step is ``run(ev, red, cfg, out)``: it adds its block to ``ev.results``, a section to ``ev.report``, headline
metrics to ``ev.report.summary`` and warnings through ``ev.warn``. `run.run_evaluate` orchestrates them.
"""
