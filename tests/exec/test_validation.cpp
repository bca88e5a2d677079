// A representative subset with VK_LAYER_KHRONOS_validation below our layer (it
// sees what the layer sends to the driver: the lowered module, a device without
// the EXT) and above it (it sees what the application does: the EXT module on a
// device with the EXT). Both must report nothing, and the results must still be right.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

using namespace exec;

namespace {

// Runs each case on its own and checks the messages it caused, so a finding
// names the shader that caused it.
template <typename Case>
void CheckClean(const Env& env, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    for (const std::string& targetEnv : TargetEnvs()) {
      env.ClearMessages();
      const std::string result = Run(env, c, targetEnv, Grid{2, 1});
      const std::vector<std::string> problems = env.instance().problems();
      INFO(c.Name() << "." << targetEnv << ": " << result);
      CHECK(result.empty());
      for (const std::string& p : problems) UNSCOPED_INFO(p);
      CHECK(problems.empty());
    }
  }
}

void RunSubset(const Env& env, bool flex) {
  if (!flex) {
    CheckClean(env, std::vector<GetCoordCase>{{Use::Acc, T::F32, 8, 8}, {Use::B, T::S8, 8, 8}});
    CheckClean(env, std::vector<PerElemCase>{{ElemOp::Scalar, Use::A, T::F16, 8, 8},
                                             {ElemOp::Mat, Use::Acc, T::S32, 8, 8},
                                             {ElemOp::RowCol, Use::B, T::S8, 8, 8},
                                             {ElemOp::Struct, Use::Acc, T::F32, 8, 8}});
    CheckClean(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 8, 8, 8, 8},
                                            {kColumn, Combine::Min, T::S32, 8, 8, 8, 8},
                                            {kRowColumn, Combine::Max, T::U32, 8, 8, 8, 8}});
    CheckClean(env, std::vector<ConvertCase>{{Use::Acc, T::F32, 8, 8, Use::A, T::F16},
                                             {Use::Acc, T::F16, 8, 8, Use::B, T::F16},
                                             {Use::A, T::F16, 8, 8, Use::Acc, T::F32},
                                             {Use::B, T::U8, 8, 8, Use::Acc, T::U32},
                                             {Use::Acc, T::S32, 8, 8, Use::A, T::S8},
                                             {Use::Acc, T::U32, 8, 8, Use::A, T::S8},
                                             {Use::Acc, T::F16, 8, 8, Use::B, T::F16, true},
                                             {Use::Acc, T::S32, 8, 8, Use::B, T::S8, true},
                                             {Use::Acc, T::U32, 8, 8, Use::A, T::S8, true}});
    CheckClean(env, std::vector<MulAddCase>{{"fromacc", T::F16, T::F32, 8, 8, 8}});
  } else {
    CheckClean(env, std::vector<GetCoordCase>{{Use::A, T::F16, 16, 32}});
    CheckClean(env, std::vector<ReduceCase>{{k2x2, Combine::Sum, T::F32, 16, 16, 8, 8},
                                            {kRow, Combine::Sum, T::F32, 8, 8, 8, 24},
                                            {kRow, Combine::Sum, T::F32, 16, 16, 16, 16, "shared"}});
    CheckClean(env, std::vector<PerElemCase>{{ElemOp::Multi, Use::Acc, T::F32, 16, 32}});
    CheckClean(env, std::vector<ConvertCase>{{Use::Acc, T::F32, 16, 32, Use::A, T::F16, true}});
  }
}

}  // namespace

TEST_CASE("validation below the layer: lowered modules are valid", "[exec][validation]") {
  for (bool flex : {false, true}) {
    EXEC_ENV(env, .flex = flex, .layer = true, .validation = cmtest::Validation::BelowLayer);
    RunSubset(env, flex);
  }
}

TEST_CASE("validation above the layer: the application's use is valid", "[exec][validation]") {
  for (bool flex : {false, true}) {
    EXEC_ENV(env, .flex = flex, .layer = true, .validation = cmtest::Validation::AboveLayer);
    RunSubset(env, flex);
  }
}
