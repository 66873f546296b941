# ruff: noqa: N999 - named like the compiled extension it stands in for
"""Fake compiled DeepGEMM extension."""

from fake_sm90 import make_metadata_function

get_paged_mqa_logits_metadata = make_metadata_function()
