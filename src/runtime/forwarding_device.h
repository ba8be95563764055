#pragma once
// A Device that passes every call to another one, for wrappers that change a few of them (the
// host-only device of bench/shape_binding.cc, the tests' devices with fewer resident clusters).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/device.h"

namespace weft::runtime {

class ForwardingDevice : public Device {
public:
  explicit ForwardingDevice(std::unique_ptr<Device> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  const DeviceSpec& spec() const override { return inner_->spec(); }
  DevicePtr allocate(size_t bytes) override { return inner_->allocate(bytes); }
  void free(DevicePtr p) override { inner_->free(p); }
  void copyToDevice(DevicePtr d, const void* s, size_t n) override { inner_->copyToDevice(d, s, n); }
  void copyToHost(void* d, DevicePtr s, size_t n) override { inner_->copyToHost(d, s, n); }
  void memset(DevicePtr d, uint8_t v, size_t n) override { inner_->memset(d, v, n); }
  ModuleHandle loadModule(const std::string& ptx) override { return inner_->loadModule(ptx); }
  KernelHandle getKernel(ModuleHandle m, const std::string& n) override {
    return inner_->getKernel(m, n);
  }
  void launch(KernelHandle k, const LaunchConfig& c, const std::vector<KernelArg>& a) override {
    inner_->launch(k, c, a);
  }
  void synchronize() override { inner_->synchronize(); }
  int maxActiveBlocksPerSM(KernelHandle k, int block, size_t shared) override {
    return inner_->maxActiveBlocksPerSM(k, block, shared);
  }
  int maxActiveClusters(KernelHandle k, int block, size_t shared, int cluster) override {
    return inner_->maxActiveClusters(k, block, shared, cluster);
  }
  void beginCapture() override { inner_->beginCapture(); }
  GraphHandle endCapture() override { return inner_->endCapture(); }
  void replay(GraphHandle g) override { inner_->replay(g); }
  void updateGraphKernelArgs(GraphHandle g, size_t n, const std::vector<KernelArg>& a) override {
    inner_->updateGraphKernelArgs(g, n, a);
  }
  void updateGraphKernelLaunch(GraphHandle g, size_t n, const LaunchConfig& c,
                               const std::vector<KernelArg>& a) override {
    inner_->updateGraphKernelLaunch(g, n, c, a);
  }
  void startTimer() override { inner_->startTimer(); }
  std::optional<double> stopTimer() override { return inner_->stopTimer(); }
  std::vector<LaunchCounters> takeCounters() override { return inner_->takeCounters(); }

protected:
  Device& inner() { return *inner_; }

private:
  std::unique_ptr<Device> inner_;
};

} // namespace weft::runtime
