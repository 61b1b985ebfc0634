"""Scorers: what turns an item into a score. ``llm.py`` reads a judge's answer distribution through a
scoring rule (``rules.py``), ``classic/`` holds the pre-LLM metrics, and ``ensemble.py`` combines
other methods' scores (its combine and fit rules live there, beside the code that applies them).

Nothing is imported here, so ``import judge.scorers.rules`` never pulls in torch or the ensemble code.
"""
