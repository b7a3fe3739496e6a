// Valley fill (BF-IO H = 0) on the CPU as an XLA FFI handler: the same rule, tie-breaks and
// outputs as kernels/valley_fill.py, one instance after another in plain loops.
//
// Why native code: the rule makes U sequential choices per step, each a pass over the G
// workers and the R pool entries. XLA's CPU backend runs each choice as about a dozen small
// kernels over all seeds of a chunk, and their launch and synchronisation cost, not the
// arithmetic, is most of BF-IO's extra time per step. Here one choice is two short loops.
//
// Inputs (row-major, any number of leading batch dimensions, flattened to N instances):
//   loads int32[N, G], free int32[N, G], sizes int32[N, R], valid pred[N, R], target int32[N].
// Outputs: worker int32[N, R] (-1: not admitted), rank int32[N, R] (requests the same worker
// received before this one; 0 when not admitted).
#include <cstdint>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int32_t kBig = INT32_MAX;

// Scratch arrays reused across instances: per worker the packed key and slots taken, per pool
// entry the packed key.
struct Scratch {
  std::vector<int32_t> wkey, used, key;
};

// One instance. U = min(#waiting, #free slots) admissions: the lightest worker with a free
// slot (lowest index on ties) takes the largest waiting request that keeps it at or below
// max(running maximum load, target) (earliest pool position on ties), else the smallest
// waiting request (earliest position on ties).
//
// The keys are those of the XLA form, so that every choice is one branch-free min or max (the
// compiler vectorizes both loops; data-dependent branches here cost more than the arithmetic):
// worker L_g * G + g (INT32_MAX once full), request s * R2 + (R2 - 1 - p) (INT32_MIN once
// taken).
// Both fit int32 under the conditions `kernels.valley_fill` states (G * max load < 2^31,
// packable sizes).
void FillOne(const int32_t* loads, const int32_t* free, const int32_t* sizes, const bool* valid,
             int32_t target, int32_t G, int32_t R, int32_t R2, int32_t sh, int32_t* worker,
             int32_t* rank, Scratch& w) {
  int32_t* wkey = w.wkey.data();
  int32_t* used = w.used.data();
  int32_t* key = w.key.data();
  int64_t n_wait = 0, n_free = 0;
  int32_t top = loads[0];
  for (int32_t g = 0; g < G; ++g) {
    used[g] = 0;
    wkey[g] = free[g] > 0 ? loads[g] * G + g : kBig;
    n_free += free[g] > 0 ? free[g] : 0;
    top = loads[g] > top ? loads[g] : top;
  }
  for (int32_t i = 0; i < R; ++i) {
    key[i] = valid[i] ? sizes[i] * R2 + (R2 - 1 - i) : INT32_MIN;
    n_wait += valid[i];
    worker[i] = -1;
    rank[i] = 0;
  }
  const int32_t cap = (kBig >> sh) - 1;  // rooms above this fit every packable size
  const int64_t U = n_wait < n_free ? n_wait : n_free;
  for (int64_t u = 0; u < U; ++u) {
    int32_t best = kBig;
    for (int32_t h = 0; h < G; ++h) best = wkey[h] < best ? wkey[h] : best;
    const int32_t g = best % G, load = best / G;
    const int32_t room = (top > target ? top : target) - load;        // >= 0: top >= load
    const int32_t thr = ((room < cap ? room : cap) + 1) * R2;
    int32_t k = INT32_MIN;
    for (int32_t i = 0; i < R; ++i) {
      // A waiting request below the threshold competes with its key; one above it with
      // -(s * R2 + p) - 1 (below every fitting key: the smallest wins among them); a taken
      // or empty entry (INT32_MIN, below every threshold) with INT32_MIN. Unsigned arithmetic
      // because the unused branch overflows for INT32_MIN.
      const int32_t c = key[i];
      const auto over = static_cast<int32_t>(2u * static_cast<uint32_t>(c & (R2 - 1)) -
                                             static_cast<uint32_t>(c) - static_cast<uint32_t>(R2));
      const int32_t cand = c < thr ? c : over;
      k = cand > k ? cand : k;
    }
    const int32_t kk = k >= 0 ? k : -(k + 1);
    const int32_t s = kk >> sh;
    const int32_t i = k >= 0 ? R2 - 1 - (kk & (R2 - 1)) : kk & (R2 - 1);
    key[i] = INT32_MIN;
    worker[i] = g;
    rank[i] = used[g]++;
    const int32_t new_load = load + s;
    wkey[g] = used[g] < free[g] ? new_load * G + g : kBig;
    top = new_load > top ? new_load : top;
  }
}

ffi::Error ValleyFillImpl(ffi::Buffer<ffi::S32> loads, ffi::Buffer<ffi::S32> free,
                          ffi::Buffer<ffi::S32> sizes, ffi::Buffer<ffi::PRED> valid,
                          ffi::Buffer<ffi::S32> target, ffi::ResultBuffer<ffi::S32> worker,
                          ffi::ResultBuffer<ffi::S32> rank) {
  const int64_t N = static_cast<int64_t>(target.element_count());
  if (N == 0) return ffi::Error::Success();
  const int64_t G = static_cast<int64_t>(loads.element_count()) / N;
  const int64_t R = static_cast<int64_t>(sizes.element_count()) / N;
  if (G < 1 || static_cast<int64_t>(free.element_count()) != N * G ||
      static_cast<int64_t>(valid.element_count()) != N * R) {
    return ffi::Error::InvalidArgument("valley_fill: inconsistent operand sizes");
  }
  int32_t R2 = 1, sh = 0;
  while (R2 < R) R2 <<= 1, ++sh;
  Scratch w{std::vector<int32_t>(G), std::vector<int32_t>(G), std::vector<int32_t>(R)};
  for (int64_t n = 0; n < N; ++n) {
    FillOne(loads.typed_data() + n * G, free.typed_data() + n * G, sizes.typed_data() + n * R,
            valid.typed_data() + n * R, target.typed_data()[n], static_cast<int32_t>(G),
            static_cast<int32_t>(R), R2, sh, worker->typed_data() + n * R,
            rank->typed_data() + n * R, w);
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxschedValleyFill, ValleyFillImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());
