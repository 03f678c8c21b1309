"""`make experiments`: the [Mengacci2021] experiments on their robots, MuJoCo links, asr actuators.

    python -m asr.demo --out demo_output

Runs asr.experiments.mengacci2021 (fig. 7: step responses of the four actuators on the 1-DOF rig,
soft and stiff, against the static equilibria; fig. 11: chirp response of the qbmove Advanced;
figs. 12-13: the 2-DOF arm, horizontal steps and vertical sine tracking; fig. 14: the 5-DOF arm
pushing a 2 kg box), writes one plotly HTML figure each into the output folder (fig7.html ...
fig14.html) and prints the summary table and the wall time of each figure. The same as
`python -m asr.experiments.mengacci2021` with demo_output as the default folder. `make run`
serves the live dashboard instead (`asr dashboard`, dashboard/PROTOCOL.md).
"""

import argparse

from asr.experiments import mengacci2021


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m asr.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="demo_output", help="folder for the HTML figures")
    return mengacci2021.main(ap.parse_args(argv).out)


if __name__ == "__main__":
    main()
