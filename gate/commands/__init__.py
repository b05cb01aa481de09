"""One module per `gate` subcommand, each with `add_parser(subparsers)` and `main(args) -> int`.

Modules are imported only when their command runs, so `gate run` on a lean GPU box never imports
the web or database stack.
"""

COMMANDS: dict[str, str] = {
    "serve": "gate.commands.serve",
    "worker": "gate.commands.worker",
    "submit": "gate.commands.submit",
    "run": "gate.commands.run",
    "demo": "gate.commands.demo",
    "migrate": "gate.commands.migrate",
    "profile": "gate.commands.profile_import",
    "pch": "gate.commands.pch",
}
