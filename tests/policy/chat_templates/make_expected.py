#!/usr/bin/env python3
"""Renders the chat templates of this folder with Jinja2 the way transformers'
apply_chat_template does (sandboxed environment, trim_blocks, lstrip_blocks,
tojson, raise_exception, strftime_now) and writes expected.json, which
tests/policy/chat_template_test.cpp compares lib/llm's C++ rendering with.

The templates are the published ones of Qwen2-Instruct, Llama 3 / 3.1
Instruct and Mistral-7B-Instruct v0.2 / v0.3, as written out here (tool
branches included, though only tool-free conversations are rendered).
Run: python3 make_expected.py   (needs jinja2; the torch venv has it)
"""
import json
import os

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

SPECIAL = {
    "qwen2": {},
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.1": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "mistral-v0.2": {"bos_token": "<s>", "eos_token": "</s>"},
    "mistral-v0.3": {"bos_token": "<s>", "eos_token": "</s>"},
}

CONVERSATIONS = [
    ([{"role": "user", "content": "hi"}], True),
    ([{"role": "system", "content": "Be terse. "}, {"role": "user", "content": "Write a kernel."},
      {"role": "assistant", "content": "Here it is."}, {"role": "user", "content": "Faster?"}], True),
    ([{"role": "user", "content": "  padded\n"}, {"role": "assistant", "content": " ok \n"}], False),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}], True),
    ([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "v"}], False),
]


def raise_exception(message):
    raise TemplateError(message)


def render(source, messages, add_generation_prompt, special):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                          **special)


def main():
    out = []
    for name, special in SPECIAL.items():
        with open(os.path.join(HERE, name + ".jinja")) as f:
            source = f.read()
        for messages, gen in CONVERSATIONS:
            case = {"template": name, "messages": messages, "add_generation_prompt": gen}
            try:
                case["text"] = render(source, messages, gen, special)
            except TemplateError as e:
                case["error"] = str(e)
            out.append(case)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
