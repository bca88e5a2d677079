#include "reference.h"

#include <algorithm>

namespace exec {

const char* Name(Combine c) {
  switch (c) {
    case Combine::Sum: return "sum";
    case Combine::Min: return "min";
    case Combine::Max: return "max";
  }
  return "?";
}

const char* MaskName(int mask) {
  switch (mask) {
    case kRow: return "row";
    case kColumn: return "col";
    case kRowColumn: return "rowcol";
    case k2x2: return "2x2";
  }
  return "?";
}

namespace {

double Apply(Combine op, T t, double a, double b) {
  switch (op) {
    case Combine::Sum: return Wrap(t, a + b);
    case Combine::Min: return std::min(a, b);
    case Combine::Max: return std::max(a, b);
  }
  return 0;
}

// Folds a list of element values left to right. The test data keep every
// ordering exact, so the order the GPU picks cannot matter.
double Fold(Combine op, T t, const std::vector<double>& xs) {
  double acc = xs.at(0);
  for (size_t i = 1; i < xs.size(); ++i) acc = Apply(op, t, acc, xs[i]);
  return acc;
}

}  // namespace

Matrix Reduce(const Matrix& m, int mask, Combine op, uint32_t rows, uint32_t cols) {
  Matrix out(m.type, rows, cols);
  std::vector<double> xs;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      xs.clear();
      switch (mask) {
        case kRow:  // every element of result row r: reduction of source row r
          for (uint32_t k = 0; k < m.cols; ++k) xs.push_back(m.at(r, k));
          break;
        case kColumn:  // every element of result column c: reduction of source column c
          for (uint32_t k = 0; k < m.rows; ++k) xs.push_back(m.at(k, c));
          break;
        case kRowColumn:  // every element: reduction of the whole matrix
          xs = m.v;
          break;
        case k2x2:  // the aligned 2x2 block (2r..2r+1, 2c..2c+1)
          xs = {m.at(2 * r, 2 * c), m.at(2 * r + 1, 2 * c), m.at(2 * r, 2 * c + 1), m.at(2 * r + 1, 2 * c + 1)};
          break;
      }
      out.at(r, c) = Fold(op, m.type, xs);
    }
  return out;
}

Matrix PerElement(const Matrix& m, const std::function<double(uint32_t, uint32_t, double)>& f) {
  Matrix out(m.type, m.rows, m.cols);
  for (uint32_t r = 0; r < m.rows; ++r)
    for (uint32_t c = 0; c < m.cols; ++c) out.at(r, c) = Wrap(m.type, f(r, c, m.at(r, c)));
  return out;
}

Matrix Convert(const Matrix& m, T to, bool transpose, bool saturated) {
  Matrix out(to, transpose ? m.cols : m.rows, transpose ? m.rows : m.cols);
  for (uint32_t r = 0; r < m.rows; ++r)
    for (uint32_t c = 0; c < m.cols; ++c)
      (transpose ? out.at(c, r) : out.at(r, c)) = saturated ? WrapSaturated(to, m.at(r, c)) : Wrap(to, m.at(r, c));
  return out;
}

Matrix MulAdd(const Matrix& a, const Matrix& b, const Matrix& c) {
  Matrix out(c.type, c.rows, c.cols);
  // A bfloat16 accumulator has no arithmetic of its own: binary32 sums, rounded once at the end.
  const T sums = EncodedFormat(c.type) ? T::F32 : c.type;
  for (uint32_t i = 0; i < c.rows; ++i)
    for (uint32_t j = 0; j < c.cols; ++j) {
      double acc = c.at(i, j);
      for (uint32_t k = 0; k < a.cols; ++k) acc = Wrap(sums, acc + Wrap(sums, a.at(i, k) * b.at(k, j)));
      out.at(i, j) = Wrap(c.type, acc);
    }
  return out;
}

}  // namespace exec
