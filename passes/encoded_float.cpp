// bfloat16 (SPV_KHR_bfloat16) and fp8 (SPV_EXT_float8) values crossing lanes.
// Subgroup operations do not take these types, and converting them to f32 and
// back is not a bit-exact move (bfloat16 denormals are f32 denormals, which a
// driver may flush; NaN payloads may change). A 32-bit vector of copies of the
// value, bitcast to uint, carries the exact bits and needs only the capability
// that declared the type (vectors and OpBitcast of these types are allowed),
// not Int8/Int16.
#include "register.h"

namespace coopmat {

uint32_t EncodedShuffle(Builder& b, uint32_t value, const std::function<uint32_t(uint32_t)>& shuffle) {
  TypeManager& t = b.types();
  const uint32_t type = t.TypeOf(value);
  const uint32_t width = t.ScalarWidth(type);
  if (!t.IsEncodedFloat(type) || (width != 8 && width != 16))
    Fail("internal error: EncodedShuffle needs a bfloat16 or fp8 value");
  const uint32_t count = 32 / width;
  const uint32_t vector = t.Vector(type, count);
  const uint32_t copies = b.Emit(spv::Op::OpCompositeConstruct, vector, std::vector<uint32_t>(count, value));
  const uint32_t moved = shuffle(b.Emit(spv::Op::OpBitcast, t.Uint(), {copies}));
  return b.Emit(spv::Op::OpCompositeExtract, type, {b.Emit(spv::Op::OpBitcast, vector, {moved}), 0});
}

}  // namespace coopmat
