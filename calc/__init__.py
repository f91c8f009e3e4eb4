"""Formulas of distributed LLM training, one module per concern.

Pure Python, standard library only (it also runs in Pyodide in the browser). Plain
numbers in (SI base units: bytes, seconds, FLOP, parameters), plain numbers or small
frozen dataclasses out. Every public function validates its arguments and raises
``ValueError`` naming the argument and its allowed range; every docstring gives the
formula and its source.

Modules: ``models`` (model configs, parameter counts), ``hardware`` (GPUs, links),
``memory`` (training state bytes), ``compute`` (6ND), ``activations`` (Korthikanti
et al. 2022), ``collectives`` (ring costs and simulations), ``data_parallel``,
``zero``, ``tensor``, ``pipeline``, ``parallel3d``, ``planner`` (every layout of a run,
ranked by estimated time, with the reason each rejected one fails).
"""
