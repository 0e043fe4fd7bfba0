"""The ``layerconf`` command: explain, show, diff, check, schema and audit of a configuration.

Every command but ``schema``, ``audit diff``, ``audit replay`` and ``audit verify`` takes the
trainer's own command line after ``--``, exactly as it would be launched, and resolves it per
role with
`resolve_roles`, a parser (the bundled profile, ``--profile``, or the user's own, ``--parser
MODULE:ATTR``) and a preset (``--preset``: the roles, the role file and the rules). ``audit
diff``, ``audit replay`` and ``audit verify`` read audit records instead.
See docs/cli.md.

Exit codes: 0 success; 1 the configuration has problems (``check``), does not resolve, a key
is unknown (``explain``), or an audit record cannot be read; 2 a mistake in the layerconf
command line or in what it names (no ``--``, an unknown profile, a ``--parser`` that cannot be
imported); 74 the output or the messages cannot be written (a full disk, stdout or stderr
closed); 130 interrupted. A
reader that goes away (``| head``) is no failure: the command keeps its own status. Tool
errors are one line on stderr, never a traceback.

Secrets never reach the output: values of secret keys are redacted, and every secret value
found on the command line or in the resolved roles is replaced in whatever text is written.

Modules: `app` (`main`, dispatch), `command` (the `Command` record), `errors` (the exit
codes, `UsageError`), `trainer` (the trainer's parser, preset and sources), `resolving`,
`scrub` (secrets), `render` (tables, colour, JSON, YAML), and `commands`, one module per
command (``audit`` with ``audit diff``, ``audit replay`` and ``audit verify``). Importing
them costs nothing beyond argparse: each command imports what it needs when it runs.
"""

from layerconf.cli.app import main

__all__ = ["main"]
