#include "kda/reference_kernel.hpp"

namespace kda {

namespace {

class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(Precision precision, Algorithm algorithm, const Profile& profile)
      : precision_(precision), algorithm_(algorithm), profile_(profile) {}

  std::string name() const override {
    return std::string(precision_ == Precision::fp64 ? "ref-fp64" : "ref-fp32") +
           (algorithm_ == Algorithm::chunked ? "-chunked" : "");
  }
  const Capabilities& capabilities() const override { return capabilities_; }
  const Profile& profile() const override { return profile_; }

  RunOutcome run(Problem& problem) override {
    if (auto violations = validate(problem, profile()); !violations.empty())
      return RunOutcome::rejected(std::move(violations));
    // A single thread per call: callers (property runners, golden generation) parallelise over cases.
    const ReferenceOutputs out = precision_ == Precision::fp64 ? run_reference<double>(problem, algorithm_, 1)
                                                               : run_reference<float>(problem, algorithm_, 1);
    write_outputs(out, problem);
    return RunOutcome::ok();
  }

 private:
  static Capabilities verifying() {  // every call form, the verify forms included
    Capabilities c;
    c.modes.push_back(Mode::verify);
    c.state_sources.insert(c.state_sources.end(), {StateSource::table, StateSource::scratch});
    return c;
  }

  Precision precision_;
  Algorithm algorithm_;
  const Profile& profile_;
  Capabilities capabilities_ = verifying();
};

}  // namespace

std::unique_ptr<Kernel> make_reference_kernel(Precision precision, Algorithm algorithm, const Profile& profile) {
  return std::make_unique<ReferenceKernel>(precision, algorithm, profile);
}

}  // namespace kda
