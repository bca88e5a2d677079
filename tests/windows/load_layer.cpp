// load_layer LAYER.dll: what the Vulkan loader does first with the layer on Windows,
// without the loader (Debian has no Windows build of it): load the DLL, find the
// four entry points by name, negotiate interface version 2, and ask for the
// instance-level commands the loader calls next. Exit 0 when every step works.
#include <vulkan/vk_layer.h>
#include <windows.h>

#include <cstdio>
#include <cstring>
#include <cwchar>

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  failures += !ok;
}

}  // namespace

int wmain(int argc, wchar_t** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_layer LAYER.dll\n");
    return 2;
  }
  HMODULE layer = LoadLibraryW(argv[1]);
  Check(layer != nullptr, "LoadLibraryW loads the layer DLL");
  if (!layer) return 1;
  auto negotiate = reinterpret_cast<PFN_vkNegotiateLoaderLayerInterfaceVersion>(
      reinterpret_cast<void*>(GetProcAddress(layer, "vkNegotiateLoaderLayerInterfaceVersion")));
  auto getInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(reinterpret_cast<void*>(GetProcAddress(layer, "vkGetInstanceProcAddr")));
  Check(negotiate != nullptr, "vkNegotiateLoaderLayerInterfaceVersion is exported");
  Check(getInstanceProcAddr != nullptr, "vkGetInstanceProcAddr is exported");
  Check(GetProcAddress(layer, "vkGetDeviceProcAddr") != nullptr, "vkGetDeviceProcAddr is exported");
  Check(GetProcAddress(layer, "vk_layerGetPhysicalDeviceProcAddr") != nullptr,
        "vk_layerGetPhysicalDeviceProcAddr is exported");
  if (negotiate) {
    VkNegotiateLayerInterface request{};
    request.sType = LAYER_NEGOTIATE_INTERFACE_STRUCT;
    request.loaderLayerInterfaceVersion = 2;
    Check(negotiate(&request) == VK_SUCCESS, "interface version 2 is accepted");
    Check(request.pfnGetInstanceProcAddr && request.pfnGetDeviceProcAddr && request.pfnGetPhysicalDeviceProcAddr,
          "negotiation returns the three entry points");
    request.loaderLayerInterfaceVersion = 1;
    Check(negotiate(&request) != VK_SUCCESS, "interface version 1 is refused");
  }
  if (getInstanceProcAddr) {
    Check(getInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance") != nullptr, "vkCreateInstance is intercepted");
    Check(getInstanceProcAddr(VK_NULL_HANDLE, "vkCreateDevice") == nullptr,
          "without an instance, only global commands are returned");
  }
  Check(FreeLibrary(layer) != 0, "the DLL unloads");
  return failures == 0 ? 0 : 1;
}
