"""Past one machine: a run's model work answered by actors on a Ray cluster, the cache and outputs kept here.

The driver (the ``judge`` process) plans the run as a local run does and writes every output; its backend is
a :class:`judge.distributed.backend.RayBackend`, whose executor ships the uncached units of each pass to the
actors (:mod:`judge.distributed.executor`). Only :mod:`judge.engine.ray_options` is read without the ``ray``
extra; everything else is imported when a run asks for a cluster (docs/distributed.md).
"""
