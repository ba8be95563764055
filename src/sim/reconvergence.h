#pragma once
// Where a warp that diverges at a conditional branch reconverges: the branch's immediate
// post-dominator in its function's control-flow graph (basic blocks split at branch targets
// and after bra/ret/exit/trap, with a virtual exit node that ret, exit, trap and falling off
// the end lead to). The executor keeps a reconvergence stack per warp and runs the two
// sides of a divergent branch one after the other until both reach that point.
#include "sim/program.h"

namespace weft::sim {

/// Sets Instr::reconvergePc of every guarded bra in [fn.entry, fn.end) of prog.code: the
/// first instruction of the branch's immediate post-dominator, or kNoReconvergence when that
/// is the virtual exit (the threads only meet again when they leave the function) or when a
/// side of the branch never reaches the exit (an endless loop: reconverging would wait forever).
void computeReconvergencePoints(Program& prog, const Function& fn);

} // namespace weft::sim
