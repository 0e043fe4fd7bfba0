"""The role-file schema in the real editor tooling: yaml-language-server over stdio, and ajv.

The npm packages come from ``$LAYERCONF_NPM_PREFIX`` (what ``npm --prefix`` installed into;
``.ci/run`` sets it) or from PATH. Without node or the packages the tests skip, except under
``CI=true`` or with ``LAYERCONF_NPM_PREFIX`` set, where a missing one is a failure.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import missing_tool

ROOT = Path(__file__).parent.parent
# How long one answer of the language server may take before the test fails (a bound for a
# hung server, not a measurement).
ANSWER_SECONDS = 60.0


def _missing(what: str) -> None:
    """Skip for `what` missing; fail where the tools were installed for these tests (.ci/run's
    default lane, or LAYERCONF_NPM_PREFIX set by hand)."""
    if os.environ.get("LAYERCONF_NPM_PREFIX"):
        pytest.fail(f"{what} is missing from $LAYERCONF_NPM_PREFIX")
    missing_tool(
        what, "npm install --prefix DIR yaml-language-server ajv; LAYERCONF_NPM_PREFIX=DIR"
    )


def _node_modules() -> Path | None:
    prefix = os.environ.get("LAYERCONF_NPM_PREFIX")
    return Path(prefix) / "node_modules" if prefix else None


def _server_command() -> list[str]:
    node = shutil.which("node")
    if node is None:
        _missing("node")
    modules = _node_modules()
    if modules is not None:
        script = modules / "yaml-language-server" / "bin" / "yaml-language-server"
        if script.is_file():
            return [str(node), str(script), "--stdio"]
    found = shutil.which("yaml-language-server")
    if found is None:
        _missing("the npm package yaml-language-server")
    return [str(found), "--stdio"]


class LanguageServer:
    """A yaml-language-server process spoken to over stdio, as an editor speaks to it."""

    def __init__(self, command: list[str], root: Path, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=root,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": {
                    "workspace": {"configuration": True},
                    "textDocument": {
                        "completion": {
                            "completionItem": {"documentationFormat": ["plaintext", "markdown"]}
                        },
                        "publishDiagnostics": {},
                    },
                },
            },
        )
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": {"yaml": settings}})

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        number = self.next_id
        self._send({"id": number, "method": method, "params": params})
        return self._wait(lambda message: message.get("id") == number and "method" not in message)[
            "result"
        ]

    def _wait(self, wanted: Any) -> dict[str, Any]:
        while True:
            try:
                message = self.messages.get(timeout=ANSWER_SECONDS)
            except queue.Empty:
                pytest.fail(f"yaml-language-server gave no answer in {ANSWER_SECONDS:.0f} s")
            if message is None:
                pytest.fail("yaml-language-server exited")
            if "method" in message and "id" in message:  # a request of the server's
                self._send({"id": message["id"], "result": self._answer(message)})
            elif message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                self.diagnostics[params["uri"]] = params["diagnostics"]
            if wanted(message):
                return message

    def _answer(self, request: dict[str, Any]) -> Any:
        if request["method"] == "workspace/configuration":
            sections = [item.get("section") for item in request["params"]["items"]]
            return [self.settings if section == "yaml" else None for section in sections]
        return None

    def open(self, path: Path) -> list[dict[str, Any]]:
        """Open `path` and return its diagnostics, once the schema has been applied to it."""
        uri = path.as_uri()
        text = path.read_text()
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}},
        )
        # Completion needs the schema loaded: once it answers, the diagnostics published after
        # it are the schema's.
        self.complete(path, 0, 0)
        self.diagnostics.pop(uri, None)
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]},
        )
        self._wait(lambda message: uri in self.diagnostics)
        return self.diagnostics[uri]

    def complete(self, path: Path, line: int, character: int) -> list[dict[str, Any]]:
        result = self.request(
            "textDocument/completion",
            {
                "textDocument": {"uri": path.as_uri()},
                "position": {"line": line, "character": character},
            },
        )
        items: list[dict[str, Any]] = (
            result.get("items", []) if isinstance(result, dict) else result or []
        )
        return items

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.reader.join(ANSWER_SECONDS)  # it ends at the end of the output: then close
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()


def _documentation(item: dict[str, Any]) -> str:
    documentation = item.get("documentation", "")
    if isinstance(documentation, dict):
        return str(documentation.get("value", ""))
    return str(documentation)


def _documented_settings() -> dict[str, Any]:
    """The yaml-language-server settings docs/role-files.md tells users to set, but the schema
    mapping (the files below name the schema with a modeline instead)."""
    page = (ROOT / "docs" / "role-files.md").read_text()
    blocks = re.findall(r"^```json\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
    [settings] = [json.loads(block) for block in blocks if "yaml.yamlVersion" in block]
    return {
        key.removeprefix("yaml."): value for key, value in settings.items() if key != "yaml.schemas"
    }


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the profile's schema, written by ``layerconf schema -o``."""
    directory = tmp_path_factory.mktemp("editor")
    result = subprocess.run(
        [sys.executable, "-m", "layerconf", "schema", "-o", str(directory / "roles.schema.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return directory


GOOD = """\
# yaml-language-server: $schema=./roles.schema.json
megatron:
  - name: default
    role: critic
    overrides:
      lr: 1e-5
      min_lr: 0.0
      use_kl_loss: yes
      micro_batch_size: 2
      lr_decay_style: cosine
      save: ~
      rampup_batch_size: [32, 32, 1000]
      tensor_mo
"""

BAD = """\
# yaml-language-server: $schema=./roles.schema.json
megatron:
  - role: critic
    overrides:
      lrr: 1e-5
      lr: fast
      micro_batch_size: many
      use_kl_loss: maybe
      num_nodes: 2
      lr_decay_style: cosin
      rampup_batch_size: [32, 32]
      profile_ranks: [0, x]
"""


def _messages(diagnostics: list[dict[str, Any]], text: str) -> dict[str, str]:
    """Each diagnostic's message by the key of the line it is on."""
    lines = text.splitlines()
    found = {}
    for diagnostic in diagnostics:
        line = lines[diagnostic["range"]["start"]["line"]]
        found[line.strip().partition(":")[0]] = diagnostic["message"]
    return found


def _server(workspace: Path, settings: dict[str, Any]) -> Iterator[LanguageServer]:
    server = LanguageServer(_server_command(), workspace, {"validate": True, **settings})
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def documented(workspace: Path) -> Iterator[LanguageServer]:
    """yaml-language-server set up as docs/role-files.md says (YAML 1.1)."""
    yield from _server(workspace, _documented_settings())


@pytest.fixture(scope="module")
def yaml_1_2(workspace: Path) -> Iterator[LanguageServer]:
    """yaml-language-server with its own default, YAML 1.2."""
    yield from _server(workspace, {"yamlVersion": "1.2"})


class TestYamlLanguageServer:
    """The schema as the real yaml-language-server applies it: completion and diagnostics."""

    def test_documented_settings(self) -> None:
        """The docs set YAML 1.1, as layerconf reads role files."""
        assert _documented_settings() == {"yamlVersion": "1.1"}

    def test_completes_a_key_with_its_help(
        self, workspace: Path, documented: LanguageServer
    ) -> None:
        """Typing tensor_mo offers tensor_model_parallel_size, documented with its help."""
        path = workspace / "complete.yaml"
        path.write_text(GOOD)
        documented.open(path)
        line = GOOD.splitlines().index("      tensor_mo")
        items = documented.complete(path, line, len("      tensor_mo"))
        by_label = {item["label"]: item for item in items}
        assert "tensor_model_parallel_size" in by_label, sorted(by_label)[:20]
        documentation = _documentation(by_label["tensor_model_parallel_size"])
        assert documentation.startswith("Intra-layer model parallelism.")
        assert "--tensor-model-parallel-size; int; default: 1" in documentation
        # What the preset ignores or refuses is not offered.
        assert not {"num_nodes", "actor_num_nodes", "use_critic"} & set(by_label)

    def test_completes_a_choice(self, workspace: Path, documented: LanguageServer) -> None:
        """After lr_decay_style: the choices are offered."""
        text = GOOD.replace("      tensor_mo\n", "      lr_decay_style: \n").replace(
            "      lr_decay_style: cosine\n", ""
        )
        path = workspace / "choice.yaml"
        path.write_text(text)
        documented.open(path)
        line = text.splitlines().index("      lr_decay_style: ")
        items = documented.complete(path, line, len("      lr_decay_style: "))
        assert {"cosine", "WSD"} <= {item["label"] for item in items}

    def test_good_file_is_clean(self, workspace: Path, documented: LanguageServer) -> None:
        """A valid role file, with YAML 1.1's yes and 1e-5, has no diagnostic."""
        path = workspace / "good.yaml"
        path.write_text(GOOD.replace("      tensor_mo\n", ""))
        assert documented.open(path) == []

    def test_bad_file_messages(self, workspace: Path, documented: LanguageServer) -> None:
        """A typo, wrong types, an ignored key and a bad choice each get a readable message."""
        path = workspace / "bad.yaml"
        path.write_text(BAD)
        assert _messages(documented.open(path), BAD) == {
            "lrr": "Property lrr is not allowed.",
            "lr": "'lr' must be a float; write a number such as 1e-5",
            "micro_batch_size": "'micro_batch_size' must be an int; write a whole number such as 8",
            "use_kl_loss": "'use_kl_loss' must be true or false; write true or false, unquoted (yes/no/on/off too when the editor reads YAML 1.1, as layerconf does: set yaml.yamlVersion to \"1.1\")",
            "num_nodes": "Ignored in a role file: set --actor-num-nodes / --critic-num-nodes on the command line.",
            "lr_decay_style": 'Value is not accepted. Valid values: "constant", "linear", "cosine", "inverse-square-root", "WSD".',
            "rampup_batch_size": "Array has too few items. Expected 3 or more.",
            "profile_ranks": "'profile_ranks' must be an int; write a whole number such as 8",
        }

    def test_run_wide_key_says_why(self, workspace: Path, documented: LanguageServer) -> None:
        """A key check refuses whatever its value (use_critic) is flagged with check's reason."""
        text = GOOD.replace("      tensor_mo\n", "      use_critic: true\n")
        path = workspace / "run_wide.yaml"
        path.write_text(text)
        line = text.splitlines().index("      use_critic: true")
        messages = [
            d["message"] for d in documented.open(path) if d["range"]["start"]["line"] == line
        ]
        assert (
            "'use_critic' is not allowed in a role file: it decides the whole run (every role), "
            "not one role (remove it and set --use-critic on the command line)"
        ) in messages

    def test_yaml_1_2_says_which_setting(self, workspace: Path, yaml_1_2: LanguageServer) -> None:
        """Read as YAML 1.2, yes is text: the message names the setting that reads it as layerconf does."""
        path = workspace / "yes.yaml"
        path.write_text(GOOD.replace("      tensor_mo\n", ""))
        assert _messages(yaml_1_2.open(path), GOOD) == {
            "use_kl_loss": "'use_kl_loss' must be true or false; write true or false, unquoted (yes/no/on/off too when the editor reads YAML 1.1, as layerconf does: set yaml.yamlVersion to \"1.1\")"
        }


# ajv's strict mode (strictTypes, strictRequired, strictSchema...) compiling the schema, with the
# two keywords of yaml-language-server declared: every warning it logs is collected.
AJV_STRICT = """
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020");
const warnings = [];
const logger = {log() {}, warn(...a) { warnings.push(a.join(" ")); },
                error(...a) { warnings.push(a.join(" ")); }};
const schema = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const ajv = new Ajv2020({strict: true, allErrors: true, logger});
ajv.addVocabulary(["errorMessage", "deprecationMessage"]);
let error = null;
let valid = null;
try {
  const validate = ajv.compile(schema);
  valid = JSON.parse(process.argv[2]).map((document) => validate(document));
} catch (e) {
  error = String(e.message);
}
console.log(JSON.stringify({warnings, error, valid}));
"""


def _ajv(schema_path: Path, documents: list[Any]) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        _missing("node")
    modules = _node_modules()
    if modules is None or not (modules / "ajv" / "package.json").is_file():
        _missing("the npm package ajv")
    result = subprocess.run(
        [str(node), "-e", AJV_STRICT, str(schema_path), json.dumps(documents)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NODE_PATH": str(modules)},
        timeout=ANSWER_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


class TestAjvStrict:
    """ajv in strict mode compiles the schema without a warning, and validates as layerconf reads."""

    def test_strict(self, workspace: Path) -> None:
        """No union types, no required key left undefined: strict mode has nothing to say."""
        good = {"megatron": [{"role": "critic", "overrides": {"lr": "1e-5", "save": None}}]}
        both = {"megatron": [{"role": "actor", "overrides": {}, "args": {"lr": 1e-6}}]}
        typo = {"megatron": [{"role": "actor", "overrides": {"lrr": 1}}]}
        answer = _ajv(workspace / "roles.schema.json", [good, both, typo])
        assert answer == {"warnings": [], "error": None, "valid": [True, False, False]}


class TestOutput:
    """schema -o FILE: written atomically, only to a new path or over a regular file."""

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "layerconf", "schema", *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
        )

    def test_same_as_printed(self, tmp_path: Path) -> None:
        """The file holds what the command prints, and stderr says where it went."""
        printed = self.run(cwd=tmp_path)
        written = self.run("-o", "sub/roles.json", cwd=tmp_path)
        assert written.returncode == 0, written.stderr
        assert written.stdout == ""
        assert written.stderr == "wrote sub/roles.json\n"
        assert (tmp_path / "sub" / "roles.json").read_text() == printed.stdout
        assert self.run("-o", "-", cwd=tmp_path).stdout == printed.stdout

    def test_over_a_file_through_a_link(self, tmp_path: Path) -> None:
        """A regular file is replaced, keeping its mode; a link to one stays a link."""
        target = tmp_path / "schema.json"
        target.write_text("old")
        target.chmod(0o640)
        (tmp_path / "link.json").symlink_to(target)
        assert self.run("-o", "link.json", cwd=tmp_path).returncode == 0
        assert (tmp_path / "link.json").is_symlink()
        assert json.loads(target.read_text())["required"] == ["megatron"]
        assert target.stat().st_mode & 0o777 == 0o640
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []

    @pytest.mark.parametrize(
        ("make", "what"),
        [
            (lambda path: path.mkdir(), "a directory"),
            (lambda path: os.mkfifo(path), "a FIFO (named pipe)"),
            (
                lambda path: path.symlink_to(path.parent / "nowhere"),
                "a symbolic link that leads nowhere",
            ),
            (
                lambda path: (
                    path.symlink_to(path.parent / "back"),
                    (path.parent / "back").symlink_to(path),
                ),
                "a loop of symbolic links",
            ),
        ],
        ids=["directory", "fifo", "dangling-link", "link-loop"],
    )
    def test_refuses_what_is_not_a_file(self, tmp_path: Path, make: Any, what: str) -> None:
        """A directory, a FIFO (which would block) or a dangling link: a usage error, nothing written."""
        path = tmp_path / "out.json"
        make(path)
        result = self.run("-o", "out.json", cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr == (
            f"layerconf schema: error: cannot write the schema: out.json is {what}, not a file: "
            "the schema is written only to a new path or over a regular file (name a file such "
            "as roles.schema.json)\n"
        )
        assert sorted(p.name for p in tmp_path.iterdir()) in (["out.json"], ["back", "out.json"])

    def test_a_trailing_slash(self, tmp_path: Path) -> None:
        """'new/' names a directory, not a file called new."""
        result = self.run("-o", "new/", cwd=tmp_path)
        assert result.returncode == 2
        assert "new/ is a directory, not a file" in result.stderr
        assert list(tmp_path.iterdir()) == []

    def test_a_file_as_directory(self, tmp_path: Path) -> None:
        """A path under a regular file: what is wrong, where, and no traceback."""
        (tmp_path / "plain").write_text("")
        result = self.run("-o", "plain/x.json", cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr == (
            "layerconf schema: error: cannot write the schema: plain: Not a directory\n"
        )
