// One runner per shader family: builds the variant's shader name, makes input
// data, dispatches it and compares every output with the CPU reference.
// Each returns "" on success, otherwise a description of what went wrong.
#pragma once

#include "exec_util.h"
#include "reference.h"

#include <string>

namespace exec {

// getcoord.comp: scatter m[i] to out[coord(i)], count the writes.
struct GetCoordCase {
  Use use;
  T type;
  uint32_t rows, cols;
  std::string suffix;      // "shared", "lit16", ... ("" for none)
  bool specDims = false;   // shader getcoord_<use>_<t>_spec[_suffix]; rows/cols set by spec constants
  bool columnMajor = false;
  std::string Name() const;
};
std::string Run(const Env& env, const GetCoordCase& c, const std::string& targetEnv, const Grid& grid);

// perelem.comp
// SideEffects: the element function also stores to shared memory and a buffer (OP 6).
enum class ElemOp { Scalar = 0, Mat = 1, RowCol = 2, Struct = 3, Multi = 4, Globals = 5, SideEffects = 6 };
const char* Name(ElemOp op);  // "scalar", "mat", "rowcol", "struct", "multi", "globals", "side"
struct PerElemCase {
  ElemOp op;
  Use use;
  T type;
  uint32_t rows, cols;
  bool nv = false;  // perelem_nv_...: the NV spelling, run natively by the driver
  bool specDims = false;  // perelem_<op>_<use>_<t>_spec: rows/cols set by spec constants
  std::string Name() const;
};
std::string Run(const Env& env, const PerElemCase& c, const std::string& targetEnv, const Grid& grid);

// reduce.comp
struct ReduceCase {
  int mask;
  Combine combine;
  T type;
  uint32_t rows, cols, resultRows, resultCols;
  std::string suffix;     // "shared", "lit32", "nv"
  bool specDims = false;  // reduce_<mask>_<t>_spec
  std::string Name() const;
};
std::string Run(const Env& env, const ReduceCase& c, const std::string& targetEnv, const Grid& grid);

// convert.comp
struct ConvertCase {
  Use use;
  T type;
  uint32_t rows, cols;
  Use use2;
  T type2;
  bool transpose = false;
  bool appShared = false;  // convert_..._shared: the shader keeps a canary in shared memory
  bool nearLimit = false;  // convert_..._nearlimit: the canary fills all but 128 bytes of lavapipe's limit
  bool viaAcc = false;     // convert_..._viaacc: A <-> B through an f32 accumulator (no one operation does it)
  bool saturate = false;   // convert_..._sat: saturatedConvertEXT into fp8
  bool specDims = false;   // convert_<use>_<t>_spec_to_...: rows/cols set by spec constants
  // How the SPIR-V reaches the device (the Env needs maintenance5 / shader objects for the
  // other paths); not part of the shader's name.
  cmtest::ShaderPath path = cmtest::ShaderPath::Module;
  std::string Name() const;
};
std::string Run(const Env& env, const ConvertCase& c, const std::string& targetEnv, const Grid& grid);

// muladd.comp: mode "khr" (plain), "fromacc" (A converted from an accumulator),
// "transposed" (A transposed from a K x M accumulator).
struct MulAddCase {
  std::string mode;
  T a, c;  // A/B component type, C/D component type
  uint32_t m, n, k;
  std::string Name() const;
};
std::string Run(const Env& env, const MulAddCase& c, const std::string& targetEnv, const Grid& grid);

// A run's cell on env's device: the operation (and its variant), use, component types, shape
// class and combine op, without the target environment, grid and exact dimensions, which
// only repeat it. Shape classes: "tile" (the device's listed shape, lavapipe's 8x8),
// "flex" (NV flexible dimensions), "spec" (dimensions from specialization constants).
std::string Cell(const Env& env, const GetCoordCase& c);
std::string Cell(const Env& env, const PerElemCase& c);
std::string Cell(const Env& env, const ReduceCase& c);
std::string Cell(const Env& env, const ConvertCase& c);
std::string Cell(const Env& env, const MulAddCase& c);

// Runs every case for every target environment and grid, and CHECKs each result
// with the case name in the failure message.
}  // namespace exec
