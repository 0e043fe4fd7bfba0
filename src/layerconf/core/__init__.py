"""The engine, which knows no kind of input: layers, their merge, rules, the stack, the namespace.

- `records`: `Origin` (where a value came from, `location` the one way to write it), `Layer`,
  `Setting` and its one JSON shape (`setting_json`);
- `values`: copying and comparing configuration values; `secrets`: which keys hold credentials;
- `merge`: the one definition of how layers merge, and `trace` of a path through them;
- `rules`: the `Rule` contract, `RuleContext`, the decisions, `RuleSet`;
- `stack`: `LayerStack` and `resolve_stacks` (layers -> rules -> merge -> rules -> namespace);
- `namespace`: `Namespace`, an `argparse.Namespace` that carries its `Provenance`, its bounded
  runtime writes, `freeze`;
- `explain`: `explain(args, key)`, `explain_all(args)`, `plain_settings` (the bulk walk);
- `suggest`: the did-you-mean of every message; `checks`: the argument types of public
  functions; `lazy`: import cost (regular expressions compiled on first use, the one
  ``__repr__`` every record shares, a SHA-256 without OpenSSL).

Sources (`layerconf.sources`) make layers, presets (`layerconf.presets`) put stacks and rules
together; nothing here imports them (an import-linter contract says so).
"""
