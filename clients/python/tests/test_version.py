"""The package says one version: pyproject's, updown.__version__ and the User-Agent it sends."""

import inspect
import pathlib
import re

import updown


def test_one_version_everywhere():
    pyproject = (pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.M)
    assert m, "pyproject.toml names no version"
    assert updown.__version__ == m.group(1)
    agent = inspect.signature(updown.Client.__init__).parameters["user_agent"].default
    assert agent == "updown-python/" + updown.__version__
