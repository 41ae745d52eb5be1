"""The LoadTest resource as typed models: the one source of the spec's rules and the CRD schema.

Field names are the YAML names (camelCase); every invalid spec raises `SpecError`, whose
lines each start with the path of the field at fault (`spec.load.rate: ...`). One module per
part of the spec: fields (shared field types), system, load, faults, objectives, spec (the
whole spec, its sweep, drain, runner and baseline), loadtest (the resource, reading it) and
errors (how a validation error reads). The status models live in `elves.engine.status`.
"""
