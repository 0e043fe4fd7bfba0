"""The recorded parse's short cuts say exactly what the general paths say.

`redact_argv` classifies an exact option string with one table lookup instead of the full
classification (on a parser's first command line, all of them by one search of their
names); `redacted_token` shows an exact option string as written. Each is checked
here against the general path on command lines mixing secret flags of every nargs, values that
are URLs or JSON, options the parser does not own and abbreviations.
"""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerconf.core import secrets
from layerconf.core.secrets import SECRETS, redact_argv, redacted_token


def _parser(prefix_chars: str = "-") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prefix_chars=prefix_chars, add_help=False)
    p = prefix_chars[0]
    parser.add_argument(f"{p}{p}wandb-key", f"{p}k")
    parser.add_argument(f"{p}{p}hf-token", nargs=2)
    parser.add_argument(f"{p}{p}api-key", nargs="+")
    parser.add_argument(f"{p}{p}run-secret", nargs="?")
    parser.add_argument(f"{p}{p}gh-token", action="store_true")
    parser.add_argument(f"{p}{p}lr", type=float)
    parser.add_argument(f"{p}{p}name", f"{p}n")
    parser.add_argument(f"{p}v", action="count")
    return parser


def _general(
    argv: list[str], policy: secrets.SecretPolicy, parser: argparse.ArgumentParser
) -> tuple[list[str], list[str]]:
    """`redact_argv` as it was written before its short cut: every option through
    `_option_token`, every token through `_redact_text`."""
    redacted: list[str] = []
    found: list[str] = []
    pending = 0
    waiting = False  # (for the first value of a secret flag that needs one: after '--' too)
    for written in argv:
        token = written
        # (a value argparse refuses for its '-')
        refused = waiting and secrets._refused_value(token, policy, parser, None)
        if pending and (not secrets.is_option(token, parser.prefix_chars) or refused):
            found.append(token)
            redacted.append(policy.placeholder)
            pending -= 1
            waiting = False
            continue
        if waiting and token == "--":
            redacted.append(token)
            continue
        pending = 0
        if len(token) > 1 and token[0] in parser.prefix_chars + secrets._DASHES:
            token, pending = secrets._option_token(token, policy, parser, found)
        waiting = pending > 0 and secrets._needs_value(written, parser._option_string_actions)
        if not pending:
            token = secrets._redact_text(token, policy, found)
        redacted.append(token)
    texts = sorted(
        {text for text in found if len(text) >= policy.min_scrub_length}, key=len, reverse=True
    )
    if texts:
        redacted = [secrets.scrub_text(token, texts, policy) for token in redacted]
    return redacted, found


_VALUES = [
    "s3cr3t-value",
    "1e-5",
    "-1",
    "--",
    "-",
    "https://user:pa55word@host/x",
    '{"hf_token": "hf_SECRETjson"}',
    '["x", {"api_key": "SECRETinlist"}]',
    "{not json, api_key: x}",
    "--sglang-mem",
    "--wandb-k",
    "--wandb-key=s3cr3t-inline",
    "-ks3cr3t-short",
    "-vk",
    "--lr=https://u:pa55@h",
    "--nope=1",
    "--hf-tokn",
    "-s3cr3t-dashed",
    "\u2014wandb-key",
    "\u2013k=s3cr3t-typographic",
]


def _tokens(prefix: str) -> st.SearchStrategy[list[str]]:
    options = list(_parser(prefix)._option_string_actions)
    values = [v.replace("-", prefix) if prefix != "-" and v.startswith("-") else v for v in _VALUES]
    return st.lists(st.sampled_from(options + values), max_size=12)


class TestRedactArgvShortCut:
    @settings(max_examples=300)
    @given(_tokens("-"), st.sampled_from([SECRETS, SECRETS.extend(names=["lr", "name"])]))
    def test_same_as_the_general_path(self, argv: list[str], policy: secrets.SecretPolicy) -> None:
        parser = _parser()
        redacted = redact_argv(argv, policy, parser=parser)  # a first look (see below)
        assert redacted == _general(argv, policy, parser)

    @settings(max_examples=100)
    @given(_tokens("+"))
    def test_other_prefix_chars(self, argv: list[str]) -> None:
        parser = _parser("+")
        assert redact_argv(argv, SECRETS, parser=parser) == _general(argv, SECRETS, parser)

    def test_an_action_changed_in_place(self) -> None:
        """An exact option whose action becomes a secret's after a first command line."""
        parser = _parser()
        argv = ["--name", "c00kie-value", "--lr", "1"]
        assert redact_argv(argv, parser=parser)[1] == []
        parser._option_string_actions["--name"].dest = "wandb_key"
        assert redact_argv(argv, parser=parser) == _general(argv, SECRETS, parser)
        assert redact_argv(argv, parser=parser)[1] == ["c00kie-value"]

    @settings(max_examples=200)
    @given(_tokens("-"), _tokens("-"))
    def test_first_and_later_looks_agree(self, first: list[str], argv: list[str]) -> None:
        """The first command line a parser's options see is classified in one search of
        their names, later ones option by option: both as the general path."""
        parser = _parser()
        looks = [redact_argv(first, parser=parser), redact_argv(argv, parser=parser)]
        assert looks == [_general(first, SECRETS, parser), _general(argv, SECRETS, parser)]

    def test_an_option_string_two_actions_hold(self) -> None:
        """An action whose option strings hold a secret flag's (a table changed by hand) is a
        secret flag's action too, on a first look as on later ones."""
        parser = _parser()
        parser._option_string_actions["--name"].option_strings.append("--wandb-key")
        argv = ["--name", "v4lue-secret", "--wandb-key", "k3y-secret"]
        first = redact_argv(argv, parser=parser)  # (before `_general` looks at the table)
        expected = _general(argv, SECRETS, parser)
        assert expected[1] == ["v4lue-secret", "k3y-secret"]
        assert first == redact_argv(argv, parser=parser) == expected

    @pytest.mark.parametrize(
        "change",
        [
            "no option strings",  # its secret dest is all that tells
            "dest not a string",
        ],
    )
    def test_a_table_changed_by_hand(self, change: str) -> None:
        """A first look at a table whose actions are not as argparse makes them asks each
        option: a secret flag's value is redacted on the first command line too."""
        parser = _parser()
        action = parser._option_string_actions["--wandb-key"]
        if change == "no option strings":
            action.option_strings.clear()
        else:
            parser._option_string_actions["--name"].dest = None  # type: ignore[assignment]
        argv = ["--wandb-key", "k3y-secret", "--name", "x"]
        first = redact_argv(argv, parser=parser)
        assert first == _general(argv, SECRETS, parser)
        assert first[1] == ["k3y-secret"]

    def test_a_name_lower_case_reads_otherwise_in_context(self) -> None:
        """A final 'Σ' lower-cases to 'ς' after a letter: a policy's name is found in a
        dotted option's last part, as `is_secret` reads it, on a first look too."""
        policy = SECRETS.extend(names=["Σ_KEY"])
        parser = argparse.ArgumentParser(add_help=False)
        parser.add_argument("--run.Σ_KEY")
        argv = ["--run.Σ_KEY", "s3cr3t-value"]
        first = redact_argv(argv, policy, parser=parser)
        assert first == _general(argv, policy, parser)
        assert first[1] == ["s3cr3t-value"]

    def test_a_command_line_given_as_an_iterator(self) -> None:
        argv = ["--wandb-key", "k3y-secret", "--lr", "1"]
        assert redact_argv(iter(argv), parser=_parser()) == redact_argv(argv, parser=_parser())

    @pytest.mark.parametrize(
        ("prefix_chars", "argv", "found"),
        [
            # '+x' is an option to this parser: the optional value is not taken, '+x's is
            ("-+", ["--run-secret", "+api-key", "hunter2xx"], ["hunter2xx"]),
            # argparse takes a token with a space as a value, even after a flag
            ("-", ["--wandb-key", "-my secret pass"], ["-my secret pass"]),
            # '-x' is a value to a parser of '+' options
            ("+", ["++wandb-key", "-k3y-secret"], ["-k3y-secret"]),
        ],
    )
    def test_what_argparse_takes_as_a_value(
        self, prefix_chars: str, argv: list[str], found: list[str]
    ) -> None:
        parser = _parser(prefix_chars)
        assert redact_argv(argv, parser=parser)[1] == found


class TestRedactedTokenShortCut:
    @given(st.sampled_from(_VALUES + list(_parser()._option_string_actions)))
    def test_same_as_redact_argv(self, token: str) -> None:
        parser = _parser()
        for policy in (SECRETS, SECRETS.extend(names=["lr", "name"])):
            expected = redact_argv([token], policy, parser=parser)[0][0]
            assert redacted_token(token, parser, policy) == expected

    def test_every_exact_option_shows_as_written(self) -> None:
        for prefix in "-+":
            parser = _parser(prefix)
            for option in parser._option_string_actions:
                assert redacted_token(option, parser) == option
                assert redact_argv([option], parser=parser)[0] == [option]


def test_a_cluster_is_shown_once_however_many_actions_it_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A token of clustered short flags ('-qqqq', each -q an action) is classified for its
    origin once, not once per action in it (before: 300 tokens of 136 flags classified 40,800
    times, each walking its cluster: seconds), and every action's origin is that token's."""
    import layerconf
    from layerconf.sources import _argv_recorder

    calls: list[str] = []
    real = _argv_recorder.redacted_token

    def counted(token: str, parser: argparse.ArgumentParser) -> str:
        calls.append(token)
        return real(token, parser)

    monkeypatch.setattr(_argv_recorder, "redacted_token", counted)
    parser = argparse.ArgumentParser()
    parser.add_argument("-q", action="count", default=0)
    namespace, _ = layerconf.parse_known_args(parser, ["-" + "q" * 50] * 4)
    assert namespace.q == 200
    assert len(calls) == 4
    setting = layerconf.explain(namespace, "q")
    assert (setting.argv_index, setting.token) == (3, "-" + "q" * 50)
