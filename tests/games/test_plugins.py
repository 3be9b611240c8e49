"""A broken plugin (an installed game family, entry point ``stb_pipeline.families``) never breaks
a built-in command: one that raises on import, calls ``sys.exit``, names a module that is not
there, registers garbage or a built-in name is skipped with one warning naming it and its entry
point, and what it registered is taken back; a plugin's game that cannot be made, or whose code
fails later, is one error line naming the plugin (docs/architecture.md, "Adding a game family").
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from pipeline.errors import PluginError
from pipeline.games import registry
from pipeline.games.registry import REGISTRY
from tests.conftest import REPO, invoke

#: Broken plugins: entry point name -> (its module's text, the entry point's value or None for
#: the module itself, what its warning says).
BROKEN = {
    "raises": ('raise RuntimeError("boom")', None, "RuntimeError: boom"),
    "exits": ("import sys\nsys.exit(3)", None, "it called sys.exit(3)"),
    "absent": ("", "no_such_module_for_stb", "No module named 'no_such_module_for_stb'"),
    "interrupts": ("raise KeyboardInterrupt", None, "it raised KeyboardInterrupt"),
    "noattr": ("", "{module}:nothing_here", "has no attribute 'nothing_here'"),
    "garbage": (
        "from pipeline.games.registry import register\nregister('not a variant')",
        None,
        "it registered str 'not a variant', not a Variant",
    ),
    "taken": (
        "from pipeline.games.registry import Variant, register\n"
        "register(Variant('plugin-good-one', 'fine', lambda: None))\n"
        "register(Variant('classic', 'a built-in name', lambda: None))",
        None,
        "it registered 'classic', the name of a built-in variant",
    ),
    "custom": (
        "from pipeline.games.registry import Variant, register\n"
        "register(Variant('stb-12t-3d6-shut', 'a rule set built-in names read', lambda: None))",
        None,
        "the name of a built-in variant",
    ),
    "blank": (
        "from pipeline.games.registry import Variant, register\n"
        "register(Variant('a b', 'a name no command can take', lambda: None))",
        None,
        "it registered a variant named 'a b'",
    ),
}
#: Plugins that load, but whose game is garbage or fails once asked.
FAILING = {
    "junkmake": "from pipeline.games.registry import Variant, register\n"
    "register(Variant('junk-game', 'make() gives text', lambda: 'garbage', in_all=False))",
    "gamefails": "from pipeline.games.base import Game\n"
    "from pipeline.games.registry import Variant, register\n"
    "class Broken(Game):\n"
    "    objective = 'wins'\n"
    "    def rules(self): raise ZeroDivisionError('rules broke')\n"
    "    def graph(self): raise ZeroDivisionError('graph broke')\n"
    "    def describe_moves(self, label): raise ZeroDivisionError\n"
    "    def describe_states(self, s): raise ZeroDivisionError\n"
    "    def parse_state(self, text, **extra): raise ZeroDivisionError('parse broke')\n"
    "    def start_state(self): return 0\n"
    "register(Variant('broken-game', 'its rules raise', Broken, in_all=False))",
}


def install(site: Path, name: str, text: str, value: str | None) -> EntryPoint:
    """A plugin package ``stbplug_<name>`` in ``site`` with its ``.dist-info``; its entry point."""
    module = f"stbplug_{name}"
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(text + "\n")
    info = site / f"stbplug_{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: stbplug-{name}\nVersion: 0.1\n")
    shown = (value or module).format(module=module)
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINTS}]\n{name} = {shown}\n")
    return EntryPoint(name, shown, registry.ENTRY_POINTS)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding every broken and failing plugin."""
    folder = tmp_path_factory.mktemp("site")
    for name, (text, value, _) in BROKEN.items():
        install(folder, name, text, value)
    for name, text in FAILING.items():
        install(folder, name, text, None)
    return folder


def stb(site: Path, *args: object) -> subprocess.CompletedProcess[str]:
    """`stb-pipeline ARGS` in a process that sees the plugins of ``site`` installed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "STB_QUIET": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *map(str, args)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_every_broken_plugin_is_one_warning_and_the_built_in_commands_work(
    site: Path, tmp_path: Path
) -> None:
    listed = stb(site, "variants", "-d", tmp_path)
    assert listed.returncode == 0, listed.stderr
    warnings = listed.stderr.splitlines()
    assert len(warnings) == len(BROKEN), listed.stderr
    for name, (_, value, said) in BROKEN.items():
        (line,) = [w for w in warnings if f"plugin {name!r}" in w]
        assert line.startswith("warning: ") and said in line and "skipped" in line, line
        shown = (value or f"stbplug_{name}").format(module=f"stbplug_{name}")
        assert f"entry point {registry.ENTRY_POINTS}: {name} = {shown}" in line
    # what loaded is listed, what a skipped plugin registered before it failed is not
    assert "junk-game" in listed.stdout and "broken-game" in listed.stdout
    assert "plugin-good-one" not in listed.stdout
    assert "classic" in listed.stdout and "a built-in name" not in listed.stdout
    # a name that is no variant makes the registry read the plugins: still one line
    unknown = stb(site, "expect", "-v", "no-such-variant", "123", "-d", tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines()[-1].startswith("error: unknown variant")
    assert "internal error" not in unknown.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["expect", "-v", "junk-game", "1"], "making 'junk-game' gave str, not a game"),
        (["build", "-v", "junk-game"], "making 'junk-game' gave str, not a game"),
        (["expect", "-v", "broken-game", "1"], "failed: ZeroDivisionError: parse broke"),
        (["build", "-v", "broken-game"], "failed: ZeroDivisionError: rules broke"),
    ],
)
def test_a_plugin_game_that_fails_is_one_line_naming_the_plugin(
    site: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    done = stb(site, *args, "-d", tmp_path / "data")
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: plugin ") and said in last, done.stderr
    assert "internal error" not in done.stderr


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as it is before any plugin is read (restored after the test)."""
    REGISTRY._load(plugins=False)
    monkeypatch.setattr(REGISTRY, "_items", dict(REGISTRY._items))
    monkeypatch.setattr(REGISTRY, "_plugins", False)
    monkeypatch.setattr(registry, "PLUGIN_OF", {})
    monkeypatch.setattr(registry, "PLUGIN_PACKAGES", {})


def test_a_skipped_plugin_takes_back_its_readers(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin that added a name reader and then failed leaves the readers as they were."""
    text = (
        "from pipeline.games import registry\n"
        "registry.NAME_READERS.append(lambda name: None)\n"
        "registry.RULE_READERS['plugged'] = None\n"
        "raise RuntimeError('after the readers')"
    )
    entry = install(tmp_path, "readers", text, None)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "plugin_entry_points", lambda: [entry])
    readers, rules = list(registry.NAME_READERS), dict(registry.RULE_READERS)
    assert "classic" in list(REGISTRY)
    assert readers == registry.NAME_READERS
    assert rules == registry.RULE_READERS


def test_a_good_plugin_is_kept_and_named(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        "from pipeline.games.registry import Variant, register\n"
        "register(Variant('plugged-in', 'from a plugin', lambda: None, in_all=False))"
    )
    entry = install(tmp_path, "good", text, None)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "plugin_entry_points", lambda: [entry])
    assert "plugged-in" in REGISTRY
    assert registry.PLUGIN_OF["plugged-in"].startswith("plugin 'good' (entry point ")
    with pytest.raises(PluginError, match="gave NoneType, not a game"):
        REGISTRY["plugged-in"].make()


def test_the_command_line_says_a_plugins_failure_is_the_plugins(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, as the tests' runner calls the CLI: a plugin's failure is one line, exit 1."""
    entry = install(tmp_path, "gamefails2", FAILING["gamefails"].replace("broken", "broke2"), None)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "plugin_entry_points", lambda: [entry])
    result = invoke(["expect", "-v", "broke2-game", "1", "-d", tmp_path])
    assert result.code == 1
    assert result.stderr.startswith("error: plugin 'gamefails2' (entry point")
    assert "parse broke" in result.stderr and result.stderr.count("\n") == 1
