"""What the tests/mpi Python checks share: their command line (--kiln, --mpirun, --workdir,
--backend, --model), a scratch folder to work in, and the example's data set in it."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples/train/mlp_classifier.kiln")
MLP_PARAMS = ["w1", "b1", "w2", "b2", "w3", "b3"]
CNN = os.path.join(ROOT, "examples/train/cnn_classifier.kiln")
CNN_PARAMS = ["k1", "c1", "k2", "c2", "w", "b"]
# Each example's loss, parameters and make_dataset.py data set.
MODELS = {"mlp": (MLP, MLP_PARAMS, "blobs"), "cnn": (CNN, CNN_PARAMS, "bars")}


def start(description, samples):
    """Parses the command line, enters --workdir and writes `samples` spiral samples to data/."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--kiln", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--backend", default="cpu", help="cpu, or cuda (on the GPU simulator: NCCL's stand-in)")
    p.add_argument("--model", default="mlp", choices=sorted(MODELS), help="the example trained (default mlp)")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)
    subprocess.run([sys.executable, os.path.join(ROOT, "examples/train/make_dataset.py"), MODELS[a.model][2], "data",
                    "--n", str(samples)], check=True, stdout=subprocess.DEVNULL)
    return a
