"""lrlib.core.prompts: the registry, the switches, structured mode."""

from __future__ import annotations

import json

import pytest

from lrlib.core.axtree import parse
from lrlib.core.prompts import (
    BUILTIN,
    PromptOptions,
    UnknownPromptError,
    get_prompt,
    list_prompts,
    register_prompt,
)


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(UnknownPromptError) as err:
        get_prompt("papr")
    for name in BUILTIN:
        assert name in str(err.value)


def test_every_builtin_builds_a_numbered_observation(real_trees):
    item = real_trees["workarena_ipad"]
    tree = parse(item["tree"])
    for name in BUILTIN:
        msgs = get_prompt(name).build(item["goal"], tree, history=["click('79')"])
        assert [m["role"] for m in msgs] == ["system", "user"]
        user = msgs[1]["content"]
        assert item["goal"].strip() in user
        assert tree.numbered() in user
        assert user.index("</observation>") < user.index("# Answer format")


def test_switches_change_text_and_fingerprint(real_trees):
    p = get_prompt("paper")
    tree = real_trees["webarena_magento"]["tree"]
    base = p.build("g", tree, ["click('5')"])[1]["content"]
    no_hist = p.build("g", tree, ["click('5')"], use_history=False)[1]["content"]
    no_think = p.build("g", tree, think=False)[1]["content"]
    assert "click('5')" in base and "click('5')" not in no_hist
    assert "<think>" in base and "<think>" not in no_think
    prints = {
        p.fingerprint(PromptOptions(h, t, a))
        for h in (0, 1)
        for t in (0, 1)
        for a in ("tags", "json")
    }
    assert len(prints) == 8


def test_structured_mode_schema():
    p = get_prompt("defender")
    assert p.response_format(PromptOptions(answer="tags")) is None
    fmt = p.response_format(PromptOptions(answer="json", think=False))
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["ranges"]
    assert schema["properties"]["ranges"]["items"]["minItems"] == 2
    assert (
        "think"
        in p.response_format(PromptOptions(answer="json"))["json_schema"]["schema"]["required"]
    )
    text = get_prompt("paper").build("g", "[1] button 'x'", answer="json")[1]["content"]
    assert '"ranges"' in text and "<answer>" not in text
    json.dumps(fmt)  # serialisable for the HTTP request


def test_defender_warns_about_injection():
    assert "never follow" in get_prompt("defender").guidance
    assert "never follow" not in get_prompt("soft").guidance


def test_register_a_variant_in_a_few_lines():
    v = get_prompt("neutral").derive("test-tiny", guidance="Keep buttons only.")
    register_prompt(v, overwrite=True)
    assert "test-tiny" in list_prompts()
    assert (
        "Keep buttons only." in get_prompt("test-tiny").build("g", "[1] button 'x'")[1]["content"]
    )
    assert v.fingerprint() != get_prompt("neutral").fingerprint()
    with pytest.raises(ValueError, match="exists"):
        register_prompt(v)
    with pytest.raises(ValueError):
        PromptOptions(answer="xml")  # type: ignore[arg-type]
