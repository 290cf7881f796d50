// load_plugin: dlopen, the descriptor, and run() through the C ABI.
#include "kda/adapters/plugin_kernel.hpp"

#include <dlfcn.h>

#include <array>
#include <optional>
#include <vector>

#include "contract_gate.hpp"
#include "cuda_device_memory.hpp"
#include "device_staging.hpp"
#include "persistent_metadata.hpp"
#include "plugin_call.hpp"
#include "plugin_descriptor.hpp"
#include "plugin_loading.hpp"
#include "rule_names.hpp"

namespace kda::adapters {

namespace {

struct LibraryHandle {
  explicit LibraryHandle(void* h) : handle(h) {}
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
  ~LibraryHandle() { dlclose(handle); }
  void* handle;
};

// The buffers a serving run keeps for a staged call's metadata tensors; none outside serving mode.
std::vector<std::shared_ptr<GuardedBuffer>> kept_metadata(const Problem& staged) {
  std::vector<std::shared_ptr<GuardedBuffer>> out;
  if (!staged.persistent_metadata) return out;
  for (std::string_view name : metadata_tensors(staged)) out.push_back(find_tensor_field(name)->in(staged)->buffer);
  return out;
}

class PluginKernel final : public DeclaredKernel {
 public:
  PluginKernel(std::unique_ptr<LibraryHandle> library, const kda_plugin& descriptor, Declaration declaration,
               std::unique_ptr<DeviceMemory> device)
      : DeclaredKernel(std::move(declaration)),
        library_(std::move(library)),
        run_(descriptor.run),
        abi_version_(descriptor.abi_version),
        device_(std::move(device)),
        kept_on_device_(device_ ? std::make_unique<KeptDeviceBuffers>(*device_) : nullptr) {}

  RunOutcome run(Problem& problem) override {
    // A version-1 call cannot carry verify tensors: kda-oracle checks such a problem itself, and a
    // valid one (outside the plugin's capabilities, which never include verify) is not passed on.
    const bool beyond_abi = abi_version_ < 2 && needs_verify_abi(problem);
    if (auto rejected = reject_before_call(problem, profile(), declaration().checks_contract && !beyond_abi))
      return *rejected;
    if (beyond_abi)
      return RunOutcome::failed("plugin " + name() + " speaks kda_plugin.h ABI version " +
                                std::to_string(abi_version_) + ", which cannot carry a verify call (version 2 can)");
    Problem staged = persistent_.stage(problem);  // the serving run's kept metadata buffers, if any
    std::optional<DeviceStaging> on_device;        // KDA_MEMORY_CUDA: every buffer, whole, on the device
    kda_call call;
    try {
      if (device_) {
        kept_on_device_->drop_unused();
        on_device.emplace(staged, *device_, kept_metadata(staged), kept_on_device_.get());
      }
      call = make_call(staged, abi_version_, on_device ? &*on_device : nullptr);
    } catch (const std::invalid_argument& e) {
      return RunOutcome::failed(std::string("cannot pass the call to the plugin: ") + e.what());
    } catch (const DeviceError& e) {
      return RunOutcome::failed("cannot stage the call on the device for plugin " + name() + ": " + e.what());
    }
    std::array<char, 4096> message{};
    const int status = run_(&call, message.data(), message.size());
    std::vector<GuardViolation> device_strays;  // writes into the device bands the host buffers have no room for
    std::string device_error;
    if (on_device) {
      try {
        device_->synchronize();
        device_strays = on_device->copy_back();
      } catch (const DeviceError& e) {
        device_error = e.what();
      }
    }
    PersistentMetadata::unstage(staged, problem);
    if (!device_error.empty()) return RunOutcome::failed("plugin " + name() + " on the device: " + device_error);
    message.back() = '\0';  // whatever the plugin did with the buffer
    const std::string text = message.data();
    if (!device_strays.empty()) {
      std::string lines;
      for (const GuardViolation& v : device_strays) lines += "\n  " + v.describe();
      return RunOutcome::failed("plugin " + name() + " wrote outside its buffers on the device:" + lines);
    }
    switch (status) {
      case KDA_STATUS_OK: return RunOutcome::ok();
      case KDA_STATUS_REJECTED:
        try {
          return RunOutcome::rejected(parse_rejection(text));
        } catch (const std::invalid_argument& e) {
          return RunOutcome::failed("plugin " + name() + " rejected the call, but " + e.what());
        }
      case KDA_STATUS_FAILED: return RunOutcome::failed("plugin " + name() + " failed: " + text);
      default:
        return RunOutcome::failed("plugin " + name() + " returned the unknown status " + std::to_string(status) +
                                  (text.empty() ? "" : " (message: " + text + ")"));
    }
  }

 private:
  std::unique_ptr<LibraryHandle> library_;  // keeps run_ loaded
  kda_run_fn run_;
  std::uint32_t abi_version_;  // the plugin's: the version of the calls it gets
  PersistentMetadata persistent_;
  std::unique_ptr<DeviceMemory> device_;  // a KDA_MEMORY_CUDA plugin's; nullptr for host memory
  std::unique_ptr<KeptDeviceBuffers> kept_on_device_;  // persistent_'s buffers on the device (freed before device_)
};

}  // namespace

std::unique_ptr<Kernel> load_plugin(const std::filesystem::path& library) {
  return load_plugin(library, open_cuda_memory);
}

std::unique_ptr<Kernel> load_plugin(const std::filesystem::path& library, const DeviceOpener& open_device) {
  const std::string where = library.string();
  // RTLD_LOCAL: two plugins may define the same symbols. RTLD_NOW: a missing symbol fails here, not mid-run.
  void* opened = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!opened) throw PluginError(std::string("cannot load plugin: ") + dlerror());
  auto handle = std::make_unique<LibraryHandle>(opened);
  auto* descriptor_fn = reinterpret_cast<kda_plugin_descriptor_fn>(dlsym(handle->handle, KDA_PLUGIN_DESCRIPTOR_SYMBOL));
  if (!descriptor_fn)
    throw PluginError("plugin " + where + " exports no " + KDA_PLUGIN_DESCRIPTOR_SYMBOL +
                      "() (declare it with KDA_PLUGIN_EXPORT, extern \"C\" in C++)");
  const kda_plugin* descriptor = descriptor_fn();
  if (!descriptor) throw PluginError("plugin " + where + ": " + KDA_PLUGIN_DESCRIPTOR_SYMBOL + "() returned NULL");
  Declaration declaration = read_descriptor(*descriptor, where);
  std::unique_ptr<DeviceMemory> device = descriptor->memory == KDA_MEMORY_CUDA ? open_device(where) : nullptr;
  return std::make_unique<PluginKernel>(std::move(handle), *descriptor, std::move(declaration), std::move(device));
}

}  // namespace kda::adapters
