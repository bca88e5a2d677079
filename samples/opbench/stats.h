// opbench --stats: the driver's static statistics of every case and way (no dispatch).
#pragma once

namespace opbench {

// Runs the statistics mode on the arguments after --stats; returns the exit status.
int RunStatistics(int argc, char** argv);

}  // namespace opbench
