"""Run test_dealt_decode_full_graph.py's test body against a vLLM tree's own modules in cpgraph's import
sandbox (torch and the rest of vLLM stubbed): what can be run here, where vLLM cannot be installed."""
import importlib, importlib.util, sys, types
import pytest
from cpgraph.adapters import policy_at

root, test = sys.argv[1], sys.argv[2]
policy = policy_at("cpgraph.adapters.vllm:pcp", root)
shim = types.SimpleNamespace(  # the few pytest names the test uses, outside pytest's own machinery
    importorskip=lambda name, reason="": importlib.import_module(name),
    mark=types.SimpleNamespace(parametrize=lambda *a, **k: (lambda f: f)), MonkeyPatch=pytest.MonkeyPatch)
failed = 0
with policy.sandbox:
    sys.modules["pytest"] = shim
    spec = importlib.util.spec_from_file_location("dealt_decode_test", test)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.pcp_manager.__file__.startswith(root), module.pcp_manager.__file__
    for mode in ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"):
        with pytest.MonkeyPatch.context() as mp:
            try:
                module.test_dealt_decodes_run_the_full_decode_graph_that_holds_each_ranks_share(mp, mode)
                print(f"PASSED [{mode}]")
            except Exception as exc:
                failed += 1
                print(f"FAILED [{mode}]: {type(exc).__name__}: {exc}")
sys.exit(1 if failed else 0)
