"""The bottom floor: the LoadTest and SystemUnderTest resources as typed models, and their vocabulary.

The one source of the spec's rules and the CRD schema. Field names are the YAML names
(camelCase); every invalid spec raises `SpecError`, whose lines each start with the path of
the field at fault (`spec.load.rate: ...`). One module per part of the spec: fields (shared
field types), system, load, faults, objectives, spec (the whole spec, its sweep, drain, runner
and baseline), loadtest (the resource, reading it), target (a SystemUnderTest) and errors (how
a validation error reads); the status models (status), their short strings (summary), the
values they are written in (units, modelbase, scenarios), the rule language of spec.baseline
(thresholds, figures), and what is made from them (crd, builtin_system, target_scope). It imports no
other floor of the engine.
"""
