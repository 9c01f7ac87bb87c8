"""The networks the project compiles and runs as its reference workloads: the seed's random
graphs (:mod:`.random_graph`: the seed table's, seeds 100-111) and the seed's chapter-11
networks with running example A (:mod:`.seedtable`).

Production code takes its programs from here (``make cosim``: cosim/seeds.py; the board build:
flows/board.py; the report page: report/); the compiler's test tooling (:mod:`compiler.testing`)
builds on them, never the other way round.
"""
