#pragma once
// The body of each catalogue property: one rapidcheck case each (see catalogue.cpp for the docs).
#include "kda/properties/catalogue.hpp"

namespace kda::props {

void check_matches_reference(CheckContext& context);
void check_untouched(CheckContext& context);
void check_rejects_invalid(CheckContext& context);
void check_unchecked_invalid(CheckContext& context);
void check_padding_rows(CheckContext& context);
void check_causality(CheckContext& context);
void check_packing(CheckContext& context);
void check_split(CheckContext& context);
void check_layout(CheckContext& context);
void check_gva_expansion(CheckContext& context);
void check_serving_loop(CheckContext& context);
void check_metadata_reuse(CheckContext& context);
void check_verify_commit(CheckContext& context);
void check_verify_keeps_committed(CheckContext& context);
void check_verify_initial_slot(CheckContext& context);
void check_finite(CheckContext& context);

// A drawn case: the spec rapidcheck prints and shrinks, and the problem built from it.
struct DrawnCase {
  CaseSpec spec;
  Problem problem;
};

// Draws a valid case for the context's kernel, tags it with its coverage categories and builds it.
DrawnCase draw_valid_case(CheckContext& context);

}  // namespace kda::props

namespace kda::props {

// Makes sure a pooled case has at least one padding row (index -1; a verify table: a request of -1
// entries); false when the case has no pool.
bool with_padding_row(CaseSpec& spec);

}  // namespace kda::props
