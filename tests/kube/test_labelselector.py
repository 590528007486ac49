"""Label selectors are checked as the API server parses them: its grammar is accepted,
and what it refuses is refused with the reason, before any request."""

from __future__ import annotations

import pytest

from triage.kube.labelselector import SelectorError, check


@pytest.mark.parametrize("selector", [
    "", "app=vllm", "app==vllm", "app!=x", "app", "!app", "app in (a,b)",
    "app notin (a, b)", "app.kubernetes.io/name=vllm", "a=", "x>3", "app=vllm,tier",
    " app = vllm , tier != cache ", "llm-d.ai/role in (prefill,decode)"])
def test_the_api_servers_selector_grammar_is_accepted(selector: str) -> None:
    check(selector)


@pytest.mark.parametrize("selector", [
    "app in (a", "==x", "a b", "!", "app=vllm,", "app=-x", "x>a", "Foo/bar=x", "app in a",
    ",", "a/b/c=x", "app=" + "v" * 64])
def test_what_the_api_server_refuses_is_refused(selector: str) -> None:
    with pytest.raises(SelectorError):
        check(selector)
