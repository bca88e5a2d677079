// Per-operation reports of the lowering (LowerResult::operations).
#pragma once

#include "lowering.h"

namespace coopmat {

// Location and path of `inst` (not yet lowered) in `function`; the caller adds
// the scratch and the time once the operation is rewritten.
OperationReport ReportOperation(Context& context, const ir::Function& function, const ir::Instruction& inst);

}  // namespace coopmat
