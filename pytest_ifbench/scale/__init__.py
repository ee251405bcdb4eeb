"""Past one machine: shards of a run on an existing engine, their merge, a shared response cache.

* :mod:`.partition`: which instance goes to which shard (pure, deterministic, balanced by cost);
* :mod:`.shard`: the pytest plugin behind ``--ifbench-shard=K/N`` and the engines' variables;
* :mod:`.merge`: shard results files -> one run's records, with the refusals (``ifbench merge``);
* :mod:`.tier` + :mod:`.stores`: the shared second tier behind the local response cache;
* :mod:`.shared`: the pytest plugin behind ``--ifbench-shared-cache URL``.

See docs/scale.md.
"""
