"""Random multi-module package generator and random edit generator for zerolint replay fuzzing."""

from __future__ import annotations

import random
import re


class Pkg:
    def __init__(self, rng: random.Random, nmods: int):
        self.rng = rng
        self.names = [f"m{i}" for i in range(nmods)]
        self.imports = {m: [] for m in self.names}
        self.blocks = {m: [] for m in self.names}
        self.k = 0
        self.providers = []  # (callfmt, home, name) callfmt: lambda lens, n -> expr (names relative)
        self.producers = []  # (fmt, home, name)
        self.classes = []  # (name, home, kind)

    def new(self) -> int:
        self.k += 1
        return self.k

    def mod(self) -> str:
        return self.rng.choice(self.names)

    def imp(self, mod: str, line: str):
        if line not in self.imports[mod]:
            self.imports[mod].append(line)

    def need(self, mod: str, home: str, name: str):
        if home != mod and home is not None:
            self.imp(mod, f"from .{home} import {name}")

    def add(self, mod: str, text: str):
        self.blocks[mod].append(text)

    def render(self) -> dict[str, str]:
        out = {"pkg/__init__.py": ""}
        for m in self.names:
            imps = self.imports[m]
            std = sorted(i for i in imps if not i.startswith("from ."))
            rel = sorted(i for i in imps if i.startswith("from ."))
            head = "\n".join(std + ([""] if std and rel else []) + rel)
            body = "\n\n\n".join(self.blocks[m])
            text = (head + "\n\n\n" if head else "") + body + ("\n" if body else "")
            out[f"pkg/{m}.py"] = text
        return out

    # ---------------------------------------------------------------- providers
    def provider(self, mod: str):
        """An expression builder for a sink call usable in ``mod``."""
        rng = self.rng
        if self.providers and rng.random() < 0.75:
            fmt, home, name = rng.choice(self.providers)
            self.need(mod, home, name)
            return fmt
        self.imp(mod, "import deep_gemm")
        return lambda lens, n: f"deep_gemm.get_paged_mqa_logits_metadata({lens}, 64, {n})"

    def producer(self, mod: str, x: str) -> str:
        rng = self.rng
        if self.producers and rng.random() < 0.7:
            fmt, home, name = rng.choice(self.producers)
            self.need(mod, home, name)
            return fmt(x)
        d = rng.choice([2, 4, 8])
        if rng.random() < 0.15:
            return f"({x} // {d}).clamp(min=1)"
        return f"{x} // {d}"

    # ---------------------------------------------------------------- features
    def f_wrapper(self):
        m, k = self.mod(), self.new()
        call = self.provider(m)
        guard = self.rng.random() < 0.25
        name = f"sched{k}"
        if guard:
            body = f"    if num_sms > 0:\n        return {call('lens', 'num_sms')}\n    return None"
        else:
            body = f"    return {call('lens', 'num_sms')}"
        self.add(m, f"def {name}(lens, num_sms):\n{body}")
        self.providers.append((lambda l, n, name=name: f"{name}({l}, {n})", m, name))

    def f_partial(self):
        m, k = self.mod(), self.new()
        self.imp(m, "import functools")
        self.imp(m, "import deep_gemm")
        name = f"psched{k}"
        self.add(
            m, f"{name} = functools.partial(deep_gemm.get_paged_mqa_logits_metadata, block_kv=64)"
        )
        self.providers.append((lambda l, n, name=name: f"{name}({l}, num_sms={n})", m, name))

    def f_lambda(self):
        m, k = self.mod(), self.new()
        self.imp(m, "import deep_gemm")
        name = f"lsched{k}"
        self.add(
            m,
            f"{name} = lambda context_lens, num_sms: deep_gemm.get_paged_mqa_logits_metadata(context_lens, 64, num_sms)",
        )
        self.providers.append((lambda l, n, name=name: f"{name}({l}, {n})", m, name))

    def f_method_wrapper(self):
        m, k = self.mod(), self.new()
        call = self.provider(m)
        name = f"Ops{k}"
        self.add(
            m,
            f"class {name}:\n    block_kv = 64\n\n    def meta(self, context_lens, num_sms):\n"
            f"        return {call('context_lens', 'num_sms')}",
        )
        self.providers.append((lambda l, n, name=name: f"{name}().meta({l}, {n})", m, name))
        self.classes.append((name, m, "ops"))

    def f_divider(self):
        m, k = self.mod(), self.new()
        name = f"halve{k}"
        d = self.rng.choice([2, 4])
        self.add(m, f"def {name}(x):\n    return x // {d}")
        self.producers.append((lambda x, name=name: f"{name}({x})", m, name))

    def f_recursion(self):
        a, b = self.rng.sample(self.names, 2) if len(self.names) > 1 else (self.names[0],) * 2
        k = self.new()
        self.imp(a, f"from . import {b}")
        self.imp(b, f"from . import {a}")
        self.add(
            a,
            f"def ping{k}(n, lens):\n    if n > 0:\n        return {b}.pong{k}(n - 1, lens)\n    return lens // 4",
        )
        self.add(b, f"def pong{k}(n, lens):\n    return {a}.ping{k}(n, lens)")
        self.producers.append((lambda x, k=k: f"ping{k}(3, {x})", a, f"ping{k}"))

    def f_property(self):
        m, k = self.mod(), self.new()
        name = f"Lens{k}"
        call = self.provider(m)
        self.add(
            m,
            f"class {name}:\n    def __init__(self, seq_lens, num_sms):\n        self.seq_lens = seq_lens\n"
            f"        self.num_sms = num_sms\n\n"
            f"    @property\n    def lens(self):\n        return {self.producer(m, 'self.seq_lens')}\n\n"
            f"    def run(self):\n        return {call('self.lens', 'self.num_sms')}",
        )
        self.classes.append((name, m, "prop"))

    def f_global(self):
        m, k = self.mod(), self.new()
        g = f"LENS{k}"
        self.add(m, f"{g} = None")
        self.add(
            m,
            f"def set_lens{k}(seq_lens):\n    global {g}\n    {g} = {self.producer(m, 'seq_lens')}",
        )
        u = m if self.rng.random() < 0.7 else self.mod()
        call = self.provider(u)
        if u == m:
            ref = g
        else:
            self.imp(u, f"from . import {m}")
            ref = f"{m}.{g}"
        self.add(u, f"def use_global{k}(num_sms):\n    return {call(ref, 'num_sms')}")

    def f_build(self):
        m, k = self.mod(), self.new()
        lens = self.producer(m, "seq_lens")
        call = self.provider(m)
        if self.rng.random() < 0.2:
            self.add(
                m,
                f"def build{k}(seq_lens, ratio, num_sms):\n    if ratio != 1:\n        return None\n"
                f"    return {call('seq_lens // ratio', 'num_sms')}",
            )
            return
        self.add(
            m,
            f"def build{k}(seq_lens, num_sms):\n    lens = {lens}\n    return {call('lens', 'num_sms')}",
        )
        # sometimes an entry calling build from another module
        if self.rng.random() < 0.4:
            u = self.mod()
            self.need(u, m, f"build{k}")
            self.add(u, f"def entry{k}(seq_lens):\n    return build{k}(seq_lens, 132)")

    def f_partial_bound(self):
        funcs = [p for p in self.providers if p[2].startswith("sched")]
        if not funcs:
            return self.f_build()
        _, home, name = self.rng.choice(funcs)
        m, k = self.mod(), self.new()
        self.imp(m, "import functools")
        self.need(m, home, name)
        lens = self.producer(m, "seq_lens")
        self.add(
            m,
            f"def plan{k}(seq_lens, num_sms):\n    fn = functools.partial({name}, {lens})\n    return fn(num_sms)",
        )

    def f_field_class(self):
        a, k = self.mod(), self.new()
        name = f"Meta{k}"
        self.add(
            a,
            f"class {name}:\n    def __init__(self, seq_lens):\n        self.lens = {self.producer(a, 'seq_lens')}",
        )
        self.classes.append((name, a, "meta"))
        b = self.mod()
        self.need(b, a, name)
        call = self.provider(b)
        self.add(
            b, f"def run{k}(meta: {name}, num_sms):\n    return {call('meta.lens', 'num_sms')}"
        )

    def f_dataclass(self):
        a, k = self.mod(), self.new()
        name = f"DMeta{k}"
        self.imp(a, "from dataclasses import dataclass")
        self.imp(a, "import torch")
        self.add(a, f"@dataclass\nclass {name}:\n    lens: torch.Tensor\n    num: int")
        self.classes.append((name, a, "dc"))
        b = self.mod()
        self.need(b, a, name)
        self.add(
            b,
            f"def make{k}(seq_lens):\n    return {name}(lens={self.producer(b, 'seq_lens')}, num=1)",
        )
        c = self.mod()
        self.need(c, a, name)
        call = self.provider(c)
        self.add(
            c, f"def sched_dc{k}(meta: {name}, num_sms):\n    return {call('meta.lens', 'num_sms')}"
        )

    def f_subclass(self):
        a, k = self.mod(), self.new()
        base = f"Base{k}"
        call = self.provider(a)
        self.add(
            a,
            f"class {base}:\n    def __init__(self, seq_lens, num_sms):\n        self.context_lens = seq_lens\n"
            f"        self.num_sms = num_sms\n\n    def plan(self):\n"
            f"        return {call('self.context_lens', 'self.num_sms')}",
        )
        self.classes.append((base, a, "base"))
        b = self.mod()
        self.need(b, a, base)
        self.add(
            b,
            f"class Sub{k}({base}):\n    def __init__(self, seq_lens, num_sms):\n"
            f"        super().__init__(seq_lens, num_sms)\n        self.context_lens = {self.producer(b, 'seq_lens')}",
        )

    def f_init_field_sub(self):
        a, k = self.mod(), self.new()
        base = f"IBase{k}"
        self.add(
            a,
            f"class {base}:\n    def __init__(self, seq_lens, num_sms):\n        self.num_sms = num_sms\n"
            f"        self.compressed = {self.producer(a, 'seq_lens')}",
        )
        self.classes.append((base, a, "ibase"))
        b = self.mod()
        self.need(b, a, base)
        call = self.provider(b)
        self.add(
            b,
            f"class ISub{k}({base}):\n    def schedule(self):\n        return {call('self.compressed', 'self.num_sms')}",
        )

    def f_self_method(self):
        m, k = self.mod(), self.new()
        call = self.provider(m)
        self.add(
            m,
            f"class Builder{k}:\n    def __init__(self, num_sms):\n        self.num_sms = num_sms\n\n"
            f"    def _compress(self, seq_lens):\n        self.lens = {self.producer(m, 'seq_lens')}\n\n"
            f"    def build(self, seq_lens):\n        self._compress(seq_lens)\n"
            f"        return {call('self.lens', 'self.num_sms')}",
        )
        self.classes.append((f"Builder{k}", m, "builder"))

    def f_field_sink(self):
        a, k = self.mod(), self.new()
        self.imp(a, "import deep_gemm")
        base = f"FnBase{k}"
        self.add(
            a,
            f"class {base}:\n    def __init__(self, num_sms):\n        self.num_sms = num_sms\n"
            f"        self.metadata_fn = deep_gemm.get_paged_mqa_logits_metadata",
        )
        self.classes.append((base, a, "fnbase"))
        b = self.mod()
        self.need(b, a, base)
        self.add(
            b,
            f"class FnSub{k}({base}):\n    def plan(self, seq_lens):\n"
            f"        lens = {self.producer(b, 'seq_lens')}\n        return self.metadata_fn(lens, 64, self.num_sms)",
        )

    def f_registry(self):
        a, k = self.mod(), self.new()
        self.imp(a, "import deep_gemm")
        name = f"FNS{k}"
        self.add(
            a,
            f'{name} = {{\n    "sm90": deep_gemm.get_paged_mqa_logits_metadata,\n    "sm100": deep_gemm.get_paged_mqa_logits_metadata,\n}}',
        )
        b = self.mod()
        self.need(b, a, name)
        self.add(
            b,
            f"def by_arch{k}(arch, seq_lens, num_sms):\n    lens = {self.producer(b, 'seq_lens')}\n    return {name}[arch](lens, 64, num_sms)",
        )

    def f_ops_field(self):
        ops = [c for c in self.classes if c[2] == "ops"]
        if not ops:
            return self.f_method_wrapper()
        name, home, _ = self.rng.choice(ops)
        m, k = self.mod(), self.new()
        self.need(m, home, name)
        self.add(
            m,
            f"class OBuilder{k}:\n    def __init__(self, num_sms):\n        self.ops = {name}()\n        self.num_sms = num_sms\n\n"
            f"    def build(self, seq_lens):\n        lens = {self.producer(m, 'seq_lens')}\n        return self.ops.meta(lens, self.num_sms)",
        )

    def f_reexport(self):
        if not self.providers:
            return self.f_wrapper()
        fmt, home, name = self.rng.choice(self.providers)
        r = self.mod()
        if r == home:
            return
        self.need(r, home, name)
        self.providers.append((fmt, r, name))

    def f_factory(self):
        a, k = self.mod(), self.new()
        name = f"FMeta{k}"
        self.imp(a, "from dataclasses import dataclass")
        self.imp(a, "import torch")
        self.add(
            a,
            f"@dataclass\nclass {name}:\n    lens: torch.Tensor\n    block: int\n\n    @classmethod\n"
            f"    def from_lens(cls, seq_lens, ratio):\n        return cls(lens=seq_lens // ratio, block=256 // ratio)",
        )
        self.classes.append((name, a, "dc"))
        c = self.mod()
        self.need(c, a, name)
        call = self.provider(c)
        self.add(
            c, f"def plan_f{k}(meta: {name}, num_sms):\n    return {call('meta.lens', 'num_sms')}"
        )

    def f_post_init(self):
        a, k = self.mod(), self.new()
        name = f"PMeta{k}"
        self.imp(a, "from dataclasses import dataclass, field")
        self.imp(a, "import torch")
        self.add(
            a,
            f"@dataclass\nclass {name}:\n    seq_lens: torch.Tensor\n    ratio: int\n    context_lens: torch.Tensor = field(init=False)\n\n"
            f"    def __post_init__(self) -> None:\n        self.context_lens = self.seq_lens // self.ratio",
        )
        self.classes.append((name, a, "dc"))
        c = self.mod()
        self.need(c, a, name)
        call = self.provider(c)
        self.add(
            c,
            f"def plan_p{k}(meta: {name}, num_sms):\n    return {call('meta.context_lens', 'num_sms')}",
        )

    def f_field_guard(self):
        a, k = self.mod(), self.new()
        name = f"GMeta{k}"
        self.imp(a, "from dataclasses import dataclass")
        self.imp(a, "import torch")
        self.add(a, f"@dataclass\nclass {name}:\n    seq_lens: torch.Tensor\n    num_tokens: int")
        b = self.mod()
        self.need(b, a, name)
        self.add(
            b,
            f"def make_g{k}(seq_lens, num_tokens):\n    lens = seq_lens[:num_tokens]\n    return {name}(seq_lens=lens // 4, num_tokens=num_tokens)",
        )
        c = self.mod()
        self.need(c, a, name)
        call = self.provider(c)
        self.add(
            c,
            f"def sched_g{k}(meta: {name}, num_sms):\n    if meta.num_tokens == 0:\n        return None\n    return {call('meta.seq_lens', 'num_sms')}",
        )

    def f_caller_guard(self):
        a, k = self.mod(), self.new()
        call = self.provider(a)
        self.add(
            a,
            f"def _sch{k}(seq_lens, ratio, num_sms):\n    lens = seq_lens // ratio\n    return {call('lens', 'num_sms')}",
        )
        # callers in the same module (private name)
        guard = self.rng.random() < 0.6
        g = "    if ratio != 1:\n        return None\n" if guard else ""
        self.add(
            a,
            f"def gbuild{k}(seq_lens, ratio, num_sms):\n{g}    return _sch{k}(seq_lens, ratio, num_sms)",
        )

    def f_toplevel(self):
        m, k = self.mod(), self.new()
        lens = self.producer(m, "SEQ")
        call = self.provider(m)
        self.imp(m, "import torch")
        self.add(
            m, f"SEQ = torch.ones(4)\nLENS_T{k} = {lens}\nOUT{k} = {call(f'LENS_T{k}', '132')}"
        )

    def f_unknown(self):
        m, k = self.mod(), self.new()
        self.imp(m, "import lens_ops")
        name = f"norm{k}"
        self.add(
            m,
            f"def {name}(seq_lens, ratio):\n    return lens_ops.normalize_lens(seq_lens // ratio)",
        )
        self.producers.append((lambda x, name=name: f"{name}({x}, 4)", m, name))

    def f_star(self):
        if not self.providers:
            return self.f_wrapper()
        m, k = self.mod(), self.new()
        fmt = self.provider(m)
        name = f"swrap{k}"
        self.add(m, f"def {name}(*args, **kwargs):\n    return {fmt('*args', '**kwargs')}")
        self.providers.append((lambda l, n, name=name: f"{name}({l}, {n})", m, name))

    def f_selfrec(self):
        m, k = self.mod(), self.new()
        name = f"rec{k}"
        self.add(
            m,
            f"def {name}(n, lens):\n    if n > 0:\n        return {name}(n - 1, lens)\n    return lens // 2",
        )
        self.producers.append((lambda x, name=name: f"{name}(2, {x})", m, name))

    def f_alias(self):
        if not self.providers:
            return self.f_wrapper()
        fmt, home, name = self.rng.choice([p for p in self.providers])
        m, k = self.mod(), self.new()
        self.need(m, home, name)
        alias = f"alias{k}"
        self.add(m, f"{alias} = {name}")
        self.providers.append(
            (
                lambda l, n, fmt=fmt, name=name, alias=alias: fmt(l, n).replace(name, alias, 1),
                m,
                alias,
            )
        )

    def f_super(self):
        a, k = self.mod(), self.new()
        base = f"CBase{k}"
        self.add(
            a,
            f"class {base}:\n    def compress(self, seq_lens):\n        return {self.producer(a, 'seq_lens')}",
        )
        self.classes.append((base, a, "cbase"))
        b = self.mod()
        self.need(b, a, base)
        call = self.provider(b)
        self.add(
            b,
            f"class CSub{k}({base}):\n    def build(self, seq_lens, num_sms):\n        lens = super().compress(seq_lens)\n        return {call('lens', 'num_sms')}",
        )

    def f_local(self):
        m, k = self.mod(), self.new()
        call = self.provider(m)
        self.add(
            m,
            f"def outer{k}(seq_lens, num_sms):\n    def inner(x):\n        return x // 4\n\n    lens = inner(seq_lens)\n    return {call('lens', 'num_sms')}",
        )

    def f_cycle_alias(self):
        if not self.providers:
            return self.f_lambda()
        fmt, home, name = self.rng.choice(self.providers)
        b, k = self.mod(), self.new()
        self.need(b, home, name)
        alias = f"calias{k}"
        self.add(b, f"{alias} = {name}")
        self.add(
            b,
            f"def cmeta{k}(context_lens, num_sms):\n    return {fmt('context_lens', 'num_sms').replace(name, alias, 1)}",
        )
        u = home if self.rng.random() < 0.7 else self.mod()
        self.need(u, b, alias)
        call = fmt("x", "132").replace(name, alias, 1)
        if self.rng.random() < 0.5:
            self.imp(u, "import torch")
            self.add(u, f"SEQ{k} = torch.ones(4)\nCOUT{k} = {call.replace('x', f'SEQ{k} // 2', 1)}")
        else:
            self.add(
                u, f"def crun{k}(seq_lens):\n    return {call.replace('x', 'seq_lens // 2', 1)}"
            )
        self.providers.append(
            (
                lambda l, n, name=alias, fmt=fmt, orig=name: fmt(l, n).replace(orig, name, 1),
                b,
                alias,
            )
        )

    def f_field_holder(self):
        funcs = [
            p
            for p in self.providers
            if p[2].startswith(("sched", "lsched", "psched", "calias", "alias"))
        ]
        if not funcs:
            return self.f_wrapper()
        fmt, home, name = self.rng.choice(funcs)
        a, k = self.mod(), self.new()
        self.need(a, home, name)
        cls = f"Holder{k}"
        self.add(
            a,
            f"class {cls}:\n    def __init__(self):\n        self.fn = {name}\n\n"
            f"    def again(self, seq_lens):\n        return {fmt('seq_lens // 2', '1').replace(name, 'self.fn', 1)}",
        )
        self.classes.append((cls, a, "holder"))
        b = self.mod()
        self.need(b, a, cls)
        self.add(
            b,
            f"def use_holder{k}(h: {cls}, seq_lens, num_sms):\n    return {fmt('seq_lens // 4', 'num_sms').replace(name, 'h.fn', 1)}",
        )

    def f_filler(self):
        m, k = self.mod(), self.new()
        self.add(m, f"def util{k}(x):\n    return x + {k}")


FEATURES_SETUP = [
    "f_wrapper",
    "f_partial",
    "f_lambda",
    "f_method_wrapper",
    "f_divider",
    "f_recursion",
    "f_property",
    "f_unknown",
    "f_selfrec",
    "f_star",
    "f_alias",
    "f_reexport",
    "f_wrapper",
    "f_divider",
]
FEATURES_USE = [
    "f_build",
    "f_partial_bound",
    "f_field_class",
    "f_dataclass",
    "f_subclass",
    "f_init_field_sub",
    "f_self_method",
    "f_global",
    "f_filler",
    "f_build",
    "f_wrapper",
    "f_divider",
    "f_field_sink",
    "f_registry",
    "f_ops_field",
    "f_reexport",
    "f_factory",
    "f_post_init",
    "f_field_guard",
    "f_caller_guard",
    "f_toplevel",
    "f_super",
    "f_local",
    "f_alias",
    "f_star",
    "f_cycle_alias",
    "f_cycle_alias",
    "f_field_holder",
    "f_field_holder",
    "f_toplevel",
]


def generate(rng: random.Random) -> dict[str, str]:
    p = Pkg(rng, rng.randint(4, 8))
    for _ in range(rng.randint(3, 6)):
        getattr(p, rng.choice(FEATURES_SETUP))()
    for _ in range(rng.randint(4, 9)):
        getattr(p, rng.choice(FEATURES_USE))()
    return p.render()


# ====================================================================== edits
# An edit: (rng, texts) -> list of (rel, new_text) (several files for a multi-file edit) or None.


def _mods(texts):
    return sorted(r for r in texts if r != "pkg/__init__.py")


def _lines(t):
    return t.splitlines(keepends=True)


def e_comment(rng, texts):
    rel = rng.choice(_mods(texts))
    ls = _lines(texts[rel])
    i = rng.randrange(len(ls) + 1)
    ls.insert(i, rng.choice(["# a comment\n", "\n", "    # indented\n"]))
    return [(rel, "".join(ls))]


def e_delete_line(rng, texts):
    rel = rng.choice(_mods(texts))
    ls = _lines(texts[rel])
    if not ls:
        return None
    del ls[rng.randrange(len(ls))]
    return [(rel, "".join(ls))]


CLAMP = re.compile(r"\(([^()\n]+ // \w+)\)\.clamp\(min=1\)")
DIV = re.compile(r"(?<![(\w.])([\w.]+(?:\(\w+\))? // \w+)")


def e_toggle_clamp(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = [("un", m) for m in CLAMP.finditer(t)] + [("cl", m) for m in DIV.finditer(t)]
    spots = [(k, m) for k, m in spots if not (k == "cl" and t[m.end() : m.end() + 2] == ").")]
    if not spots:
        return None
    kind, m = rng.choice(spots)
    if kind == "un":
        new = t[: m.start()] + m.group(1) + t[m.end() :]
    else:
        new = t[: m.start()] + f"({m.group(1)}).clamp(min=1)" + t[m.end() :]
    return [(rel, new)]


def e_divisor(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = list(re.finditer(r"(//|\+|-) (\d+)", t))
    if not spots:
        return None
    m = rng.choice(spots)
    rep = rng.choice(["// 1", "// 4", "+ 4", "// 2", "- 1"])
    return [(rel, t[: m.start()] + rep + t[m.end() :])]


NAME_DEF = re.compile(r"^(def|class) (\w+)", re.MULTILINE)


def e_rename(rng, texts):
    rel = rng.choice(_mods(texts))
    defs = NAME_DEF.findall(texts[rel])
    if not defs:
        return None
    _, name = rng.choice(defs)
    new = name + "_r" if not name.endswith("_r") else name[:-2]
    pat = re.compile(rf"\b{re.escape(name)}\b")
    if rng.random() < 0.5:  # the definition only: references break
        return [
            (
                rel,
                NAME_DEF.sub(
                    lambda m: f"{m.group(1)} {new}" if m.group(2) == name else m.group(0),
                    texts[rel],
                ),
            )
        ]
    out = []
    for r in _mods(texts):
        t2 = pat.sub(new, texts[r])
        if t2 != texts[r]:
            out.append((r, t2))
    rng.shuffle(out)
    return out


def e_add_import(rng, texts):
    rel = rng.choice(_mods(texts))
    other = rng.choice(_mods(texts))
    om = other[4:-3]
    defs = [n for _, n in NAME_DEF.findall(texts[other])] + re.findall(
        r"^(\w+) = ", texts[other], re.MULTILINE
    )
    choices = ["import deep_gemm\n", f"from . import {om}\n", "import functools\n"]
    if defs:
        choices += [f"from .{om} import {rng.choice(defs)}\n"] * 3
    line = rng.choice(choices)
    return [(rel, line + texts[rel])]


def e_remove_import(rng, texts):
    rel = rng.choice(_mods(texts))
    ls = _lines(texts[rel])
    idx = [i for i, l in enumerate(ls) if l.startswith(("import ", "from "))]
    if not idx:
        return None
    del ls[rng.choice(idx)]
    return [(rel, "".join(ls))]


def _top_blocks(t):
    """(start, end) line ranges of top-level def/class blocks (with decorators)."""
    ls = _lines(t)
    out = []
    i = 0
    while i < len(ls):
        if ls[i].startswith(("def ", "class ", "@")):
            s = i
            while i < len(ls) and ls[i].startswith("@"):
                i += 1
            i = min(i + 1, len(ls))  # the def or class line (decorators may end the file)
            while i < len(ls) and (ls[i].startswith((" ", "\t")) or ls[i].strip() == ""):
                i += 1
            e = i
            while e > s and ls[e - 1].strip() == "":
                e -= 1
            out.append((s, e))
        else:
            i += 1
    return out


def e_move(rng, texts):
    """Move a top-level def/class to another module, with the source's imports; the
    source imports it back from its new home (or not)."""
    mods = _mods(texts)
    a, b = rng.sample(mods, 2)
    blocks = _top_blocks(texts[a])
    if not blocks:
        return None
    s, e = rng.choice(blocks)
    la = _lines(texts[a])
    block = "".join(la[s:e])
    name = NAME_DEF.search(block)
    rest = "".join(la[:s] + la[e:])
    bm = b[4:-3]
    imps = [
        l
        for l in la
        if l.startswith(("import ", "from "))
        and f"from .{bm} " not in l
        and l != f"from . import {bm}\n"
    ]
    if rng.random() < 0.7 and name:
        rest = f"from .{bm} import {name.group(2)}\n" + rest
    tb = "".join(imps) + texts[b] + "\n\n" + block
    out = [(a, rest), (b, tb)]
    rng.shuffle(out)
    return out


def e_add_subclass(rng, texts):
    defs = [(r, n) for r in _mods(texts) for k, n in NAME_DEF.findall(texts[r]) if k == "class"]
    if not defs:
        return None
    home, base = rng.choice(defs)
    rel = rng.choice(_mods(texts))
    field = rng.choice(["lens", "context_lens", "compressed", "seq_lens"])
    val = rng.choice(["seq_lens // 2", "(seq_lens // 2).clamp(min=1)", "seq_lens"])
    imp = f"from .{home[4:-3]} import {base}\n" if home != rel else ""
    n = rng.randrange(1000)
    if rng.random() < 0.5:
        body = (
            f"class Added{n}({base}):\n    def __init__(self, seq_lens, num_sms):\n"
            f"        super().__init__(seq_lens, num_sms)\n        self.{field} = {val}\n"
        )
    else:
        body = f"class Added{n}({base}):\n    def plan(self):\n        return self.{field}\n"
    return [(rel, imp + texts[rel] + "\n\n" + body)]


def e_remove_class(rng, texts):
    rel = rng.choice(_mods(texts))
    blocks = [
        (s, e)
        for s, e in _top_blocks(texts[rel])
        if _lines(texts[rel])[s].startswith(("class", "@"))
    ]
    if not blocks:
        return None
    s, e = rng.choice(blocks)
    la = _lines(texts[rel])
    return [(rel, "".join(la[:s] + la[e:]))]


def e_remove_def(rng, texts):
    rel = rng.choice(_mods(texts))
    blocks = _top_blocks(texts[rel])
    if not blocks:
        return None
    s, e = rng.choice(blocks)
    la = _lines(texts[rel])
    return [(rel, "".join(la[:s] + la[e:]))]


DEFLINE = re.compile(r"^( *)def \w+\(([^)]*)\):\n", re.MULTILINE)


def e_add_guard(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = list(DEFLINE.finditer(t))
    if not spots:
        return None
    m = rng.choice(spots)
    params = [
        p.split(":")[0].strip() for p in m.group(2).split(",") if p.strip() and p.strip() != "self"
    ]
    ind = m.group(1) + "    "
    if params:
        p = rng.choice(params)
        cond = rng.choice([f"{p} == 0", f"not {p}", f"{p} is None", f"{p}.numel() == 0"])
    else:
        cond = "self is None"
    g = f"{ind}if {cond}:\n{ind}    return None\n"
    return [(rel, t[: m.end()] + g + t[m.end() :])]


def e_remove_guard(rng, texts):
    rel = rng.choice(_mods(texts))
    ls = _lines(texts[rel])
    idx = [
        i
        for i, l in enumerate(ls[:-1])
        if l.strip().startswith("if ") and ls[i + 1].strip() == "return None"
    ]
    if not idx:
        return None
    i = rng.choice(idx)
    return [(rel, "".join(ls[:i] + ls[i + 2 :]))]


def e_toggle_if(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = list(re.finditer(r"if (\w+) (>|!=) (\d+):", t))
    if not spots:
        return None
    m = rng.choice(spots)
    rep = f"if {m.group(1)} {rng.choice(['>', '!=', '<', '=='])} {rng.choice(['0', '1', '5'])}:"
    return [(rel, t[: m.start()] + rep + t[m.end() :])]


def e_syntax_error(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    ops = [
        lambda t: t.replace("):\n", ")\n", 1) if "):\n" in t else None,
        lambda t: t.replace("return ", "return (", 1) if "return " in t else None,
        lambda t: t + "def broken(:\n",
        lambda t: t.replace("    ", "  ", 1) if "    " in t else None,
    ]
    new = rng.choice(ops)(t)
    return [(rel, new)] if new is not None else None


def e_swap_provider(rng, texts):
    """Change which name a call goes through: a call of one def to another def's name."""
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    calls = list(
        re.finditer(r"\b(sched\d+|psched\d+|lsched\d+|halve\d+|build\d+|wrap\d+)(_r)?\(", t)
    )
    if not calls:
        return None
    m = rng.choice(calls)
    allnames = sorted(
        {
            n
            for r in _mods(texts)
            for n in re.findall(r"^def ((?:sched|halve)\d+)", texts[r], re.MULTILINE)
        }
    )
    if not allnames:
        return None
    new = rng.choice(allnames)
    home = next(
        (r for r in _mods(texts) if re.search(rf"^def {new}\(", texts[r], re.MULTILINE)), None
    )
    if home is None:
        return None
    imp = f"from .{home[4:-3]} import {new}\n" if home != rel and rng.random() < 0.8 else ""
    return [(rel, imp + t[: m.start()] + new + "(" + t[m.end() :])]


def e_empty_module(rng, texts):
    rel = rng.choice(_mods(texts))
    return [(rel, "")]


def e_add_caller(rng, texts):
    """A new caller of some def with a divided argument, in some module."""
    defs = [
        (r, n) for r in _mods(texts) for n in re.findall(r"^def (\w+)\(", texts[r], re.MULTILINE)
    ]
    if not defs:
        return None
    home, name = rng.choice(defs)
    rel = rng.choice(_mods(texts))
    imp = f"from .{home[4:-3]} import {name}\n" if home != rel else ""
    n = rng.randrange(1000)
    arg = rng.choice(["seq_lens // 4", "(seq_lens // 4).clamp(min=1)", "seq_lens"])
    return [
        (
            rel,
            imp
            + texts[rel]
            + f"\n\ndef caller{n}(seq_lens, num_sms):\n    return {name}({arg}, num_sms)\n",
        )
    ]


def e_add_sink_call(rng, texts):
    rel = rng.choice(_mods(texts))
    n = rng.randrange(1000)
    return [
        (
            rel,
            "import deep_gemm\n"
            + texts[rel]
            + f"\n\ndef direct{n}(lens, num_sms):\n    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)\n",
        )
    ]


def e_remove_sink_call(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = list(
        re.finditer(r"deep_gemm\.get_paged_mqa_logits_metadata\([^\n]*\)$", t, re.MULTILINE)
    )
    if not spots:
        return None
    m = rng.choice(spots)
    return [
        (rel, t[: m.start()] + rng.choice(["None", "deep_gemm.other_kernel(1)"]) + t[m.end() :])
    ]


def e_change_base(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = list(re.finditer(r"^class (\w+)(\((\w*)\))?:", t, re.MULTILINE))
    if not spots:
        return None
    m = rng.choice(spots)
    classes = [
        (r, n)
        for r in _mods(texts)
        for k, n in NAME_DEF.findall(texts[r])
        if k == "class" and n != m.group(1)
    ]
    if not classes or rng.random() < 0.25:
        return [(rel, t[: m.start()] + f"class {m.group(1)}:" + t[m.end() :])]
    home, base = rng.choice(classes)
    imp = f"from .{home[4:-3]} import {base}\n" if home != rel else ""
    return [(rel, imp + t[: m.start()] + f"class {m.group(1)}({base}):" + t[m.end() :])]


def e_decorator(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    ls = _lines(t)
    deco = [i for i, l in enumerate(ls) if l.strip() in ("@property", "@dataclass", "@classmethod")]
    if deco and rng.random() < 0.5:
        del ls[rng.choice(deco)]
        return [(rel, "".join(ls))]
    defs = [i for i, l in enumerate(ls) if l.startswith("    def ") and "(self" in l]
    if not defs:
        return None
    i = rng.choice(defs)
    ls.insert(i, "    @property\n")
    return [(rel, "".join(ls))]


def e_rename_attr(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    spots = list(re.finditer(r"(self|meta)\.(\w+)", t))
    if not spots:
        return None
    m = rng.choice(spots)
    new = m.group(2)[:-1] if m.group(2).endswith("2") else m.group(2) + "2"
    return [(rel, t[: m.start(2)] + new + t[m.end(2) :])]


def e_toggle_global(rng, texts):
    rel = rng.choice(_mods(texts))
    t = texts[rel]
    ls = _lines(t)
    gl = [i for i, l in enumerate(ls) if l.strip().startswith("global ")]
    if not gl:
        return None
    i = rng.choice(gl)
    ls[i] = ls[i].replace("global ", "# global ", 1) if "# global" not in ls[i] else ls[i]
    return [(rel, "".join(ls))]


EDITS = [
    (e_comment, 3),
    (e_delete_line, 3),
    (e_toggle_clamp, 6),
    (e_divisor, 2),
    (e_rename, 3),
    (e_add_import, 2),
    (e_remove_import, 2),
    (e_move, 2),
    (e_add_subclass, 2),
    (e_remove_class, 1),
    (e_remove_def, 1),
    (e_add_guard, 2),
    (e_remove_guard, 2),
    (e_toggle_if, 1),
    (e_syntax_error, 2),
    (e_swap_provider, 2),
    (e_empty_module, 0.3),
    (e_add_caller, 2),
    (e_add_sink_call, 1.5),
    (e_remove_sink_call, 1.5),
    (e_change_base, 1.5),
    (e_decorator, 1),
    (e_rename_attr, 1.5),
    (e_toggle_global, 0.7),
]


def random_edit(rng, texts, pending_fix):
    """Returns (name, [(rel, text)]). ``pending_fix``: rel -> text before a syntax error."""
    if pending_fix and rng.random() < 0.5:
        rel = rng.choice(sorted(pending_fix))
        return "fix_syntax", [(rel, pending_fix.pop(rel))]
    fns, ws = zip(*EDITS)
    for _ in range(20):
        fn = rng.choices(fns, ws)[0]
        out = fn(rng, texts)
        if out:
            out = [(r, t) for r, t in out if t != texts[r]]
            if out:
                if fn is e_syntax_error:
                    pending_fix.setdefault(out[0][0], texts[out[0][0]])
                return fn.__name__, out
    return None, []
