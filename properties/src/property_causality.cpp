// causality: a change at token t of one sequence moves no bit of any earlier output, nor of any
// other sequence's output.
#include <rapidcheck.h>

#include <cstring>

#include "failure_text.hpp"
#include "kda/properties/property_bodies.hpp"

namespace kda::props {

namespace {

// A different, still valid value for every input at one token: q, k, v negated and shifted,
// gates and beta moved inside their valid ranges.
void perturb_token(Problem& p, std::int64_t row, std::int64_t t) {
  for (Tensor* x : {&p.q, &p.k})
    for (std::int64_t h = 0; h < p.H; ++h)
      for (std::int64_t c = 0; c < p.K; ++c) x->set({row, t, h, c}, 0.5 - x->at({row, t, h, c}));
  for (std::int64_t h = 0; h < p.HV; ++h) {
    for (std::int64_t c = 0; c < p.V; ++c) p.v.set({row, t, h, c}, 0.5 - p.v.at({row, t, h, c}));
    for (std::int64_t c = 0; c < p.K; ++c) {
      const double g = p.g.at({row, t, h, c});
      p.g.set({row, t, h, c}, p.options.gate_in_kernel ? 1.0 - g : 0.5 * g - 0.25);
    }
    const double b = p.beta.at({row, t, h});
    p.beta.set({row, t, h}, p.options.beta_from_logits ? 0.75 - b : 1.0 - 0.5 * b);
  }
}

bool same_bits(const Tensor& a, const Tensor& b, std::initializer_list<std::int64_t> index) {
  const auto size = size_of(a.dtype());
  return std::memcmp(a.buffer->data() + a.view.element_at(index) * static_cast<std::int64_t>(size),
                     b.buffer->data() + b.view.element_at(index) * static_cast<std::int64_t>(size), size) == 0;
}

}  // namespace

void check_causality(CheckContext& context) {
  Problem base = draw_valid_case(context).problem;
  std::vector<std::int64_t> candidates;
  for (std::int64_t n = 0; n < base.N; ++n)
    if (base.length(n) >= 2) candidates.push_back(n);
  RC_PRE(!candidates.empty());
  const std::int64_t n = *rc::gen::elementOf(candidates);
  const std::int64_t t = *rc::gen::inRange<std::int64_t>(1, base.length(n));
  context.note_case(base);
  Problem changed = deep_copy(base);
  perturb_token(changed, base.row(n), base.first(n) + t);

  for (Problem* p : {&base, &changed}) {
    const RunOutcome outcome = context.kernel.run(*p);
    if (outcome.status != RunOutcome::Status::ok)
      RC_FAIL("the kernel did not run a valid case: " + outcome.message + "\n  problem: " + p->describe());
  }
  for (std::int64_t m = 0; m < base.N; ++m) {
    const std::int64_t end = m == n ? base.first(n) + t : base.first(m) + base.length(m);
    for (std::int64_t tok = base.first(m); tok < end; ++tok)
      for (std::int64_t h = 0; h < base.HV; ++h)
        for (std::int64_t c = 0; c < base.V; ++c)
          if (!same_bits(base.o, changed.o, {base.row(m), tok, h, c}))
            RC_FAIL("changing token " + std::to_string(t) + " of sequence " + std::to_string(n) +
                    " changed the output of sequence " + std::to_string(m) + " at token " +
                    std::to_string(tok - base.first(m)) + " head " + std::to_string(h) + " channel " +
                    std::to_string(c) + ": " + detail::format_value(base.o.at({base.row(m), tok, h, c})) + " -> " +
                    detail::format_value(changed.o.at({base.row(m), tok, h, c})) + "\n  problem: " + base.describe());
  }
}

}  // namespace kda::props
