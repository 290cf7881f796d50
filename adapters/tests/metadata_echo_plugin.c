/* A plugin that computes nothing: every call fails with a message saying where its cu_seqlens and
 * state_indices are and what they hold ("cu_seqlens <pointer> [0,2,5] state_indices <pointer> [1,0]"),
 * for kda-oracle's tests of persistent metadata (adapters/README.md). */
#include <stdio.h>
#include <string.h>

#include "kda/adapters/kda_plugin.h"

/* Appends " <name> <pointer> [v0,v1,...]" to message; nothing for an absent tensor. */
static void echo(char* message, size_t size, const char* name, const kda_tensor* t) {
  int64_t i;
  if (!t->present) return;
  snprintf(message + strlen(message), size - strlen(message), " %s %p [", name, t->data);
  for (i = 0; i < t->shape[0]; ++i) {
    const char* at = (const char*)t->data + i * t->strides[0] * (t->dtype == KDA_I64 ? 8 : 4);
    long long value;
    if (t->dtype == KDA_I64) {
      int64_t v;
      memcpy(&v, at, sizeof v);
      value = (long long)v;
    } else {
      int32_t v;
      memcpy(&v, at, sizeof v);
      value = (long long)v;
    }
    snprintf(message + strlen(message), size - strlen(message), "%s%lld", i ? "," : "", value);
  }
  snprintf(message + strlen(message), size - strlen(message), "]");
}

static int run(const kda_call* call, char* message, size_t message_size) {
  message[0] = '\0';
  echo(message, message_size, "cu_seqlens", &call->cu_seqlens);
  echo(message, message_size, "state_indices", &call->state_indices);
  return KDA_STATUS_FAILED;
}

static const kda_plugin descriptor = {
    KDA_PLUGIN_ABI_VERSION,
    "metadata-echo",
    "strict",
    KDA_BIT(KDA_MODE_PREFILL) | KDA_BIT(KDA_MODE_DECODE),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_LAYOUT_VK),
    KDA_BIT(KDA_STATE_POOL),
    NULL,
    0,
    NULL,
    0,
    128,
    NULL,
    0,
    KDA_CAP_VARLEN,
    KDA_MEMORY_HOST,
    run,
    KDA_ARITHMETIC_FP32,
};

const kda_plugin* kda_plugin_descriptor(void) { return &descriptor; }
