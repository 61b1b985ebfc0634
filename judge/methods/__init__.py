"""Method types: one module per kind of method (``llm``, ``likelihood``, ``classic``, ``ensemble``),
each a :class:`~judge.engine.spec.MethodType` registered by name in
:data:`~judge.engine.spec.METHOD_TYPES`, where the engine finds it when a spec names it. The contract
and the spec are in :mod:`judge.engine.spec`; a new type is one module and one registration
(docs/extending.md, "A new method type")."""
