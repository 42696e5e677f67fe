// Inlining every call of a TorchScript graph. torch::jit::Inline inlines
// each call with the callee's *optimized* graph, which is itself inlined
// only while the graph executor optimizes; lib/task turns that off
// (setGraphExecutorOptimize(false), task.cpp), so one pass leaves the calls
// one level down: a model whose forward calls an nn.Sequential of
// nn.Linear keeps prim::CallMethod nodes, and kbprof saw no aten::linear
// in KernelBench level3/1_MLP (its cuBLAS kernels were then refused as a
// library outside the task's ops). Private to lib/task.
#pragma once

#include <functional>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>

namespace kb::task {

// Inlines until no prim::CallMethod / prim::CallFunction is left (bounded:
// a graph nested deeper than 64 calls keeps the rest).
inline void inlineAllCalls(torch::jit::Graph& graph) {
  std::function<bool(torch::jit::Block*)> has_call = [&](torch::jit::Block* block) {
    for (torch::jit::Node* n : block->nodes()) {
      if (n->kind() == c10::prim::CallMethod || n->kind() == c10::prim::CallFunction) return true;
      for (torch::jit::Block* b : n->blocks())
        if (has_call(b)) return true;
    }
    return false;
  };
  for (int depth = 0; depth < 64 && has_call(graph.block()); ++depth) torch::jit::Inline(graph);
}

}  // namespace kb::task
