// opbench --stats: the driver's static statistics of every case and way (no dispatch).
#pragma once

#include "cases.h"
#include "vulkan_app.h"

namespace opbench {

// Whether the device lists (or, with NV flexible dimensions, allows) the case's
// source and result matrix types: a pipeline with any other type is invalid usage.
bool CaseUsable(const sample::Context& context, const Case& c);

// Runs the statistics mode on the arguments after --stats; returns the exit status.
int RunStatistics(int argc, char** argv);

}  // namespace opbench
