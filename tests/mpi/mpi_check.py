"""What the tests/mpi Python checks share: their command line (--kiln, --mpirun, --workdir), a
scratch folder to work in, and the MLP example's data set in it."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples/train/mlp_classifier.kiln")
MLP_PARAMS = ["w1", "b1", "w2", "b2", "w3", "b3"]


def start(description, samples):
    """Parses the command line, enters --workdir and writes `samples` spiral samples to data/."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--kiln", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--workdir", required=True)
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)
    subprocess.run([sys.executable, os.path.join(ROOT, "examples/train/make_dataset.py"), "blobs", "data", "--n",
                    str(samples)], check=True, stdout=subprocess.DEVNULL)
    return a
