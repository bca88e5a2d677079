// CPU reference of the VK_EXT_cooperative_matrix_maintenance1 semantics, written
// from the SPIR-V extension text (shared/reference/spec.md §2), not from the
// layer. Every element result is rounded/wrapped into the element type after
// each operation, as the GPU arithmetic of that type does.
#pragma once

#include "exec_util.h"

#include <functional>

namespace exec {

// Reduce mask bits (CooperativeMatrixReduce).
enum ReduceMask : int { kRow = 1, kColumn = 2, kRowColumn = 3, k2x2 = 4 };
enum class Combine { Sum = 0, Min = 1, Max = 2 };  // values = spec constant 4 of reduce.comp
const char* Name(Combine c);
const char* MaskName(int mask);  // "row", "col", "rowcol", "2x2"

// OpCooperativeMatrixReduceEXT: result is rows x cols (rows == m.rows for Row,
// cols == m.cols for Column, half of both for 2x2, anything for Row|Column).
Matrix Reduce(const Matrix& m, int mask, Combine op, uint32_t rows, uint32_t cols);

// OpCooperativeMatrixPerElementOpEXT: result(r,c) = f(r, c, m(r,c)) wrapped into m.type.
Matrix PerElement(const Matrix& m, const std::function<double(uint32_t, uint32_t, double)>& f);

// Element-wise conversion into `to` (Op*Convert / ConvertUseEXT value semantics);
// transposed: result(c,r) = convert(m(r,c)); saturated: into fp8 with
// SaturatedToLargestFloat8NormalConversionEXT.
Matrix Convert(const Matrix& m, T to, bool transpose, bool saturated = false);

// D = A * B + C in the type of C (every product and sum wrapped into C's type).
Matrix MulAdd(const Matrix& a, const Matrix& b, const Matrix& c);

}  // namespace exec
