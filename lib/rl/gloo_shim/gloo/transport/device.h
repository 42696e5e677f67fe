// Shim: see ../../README.md.
#pragma once
namespace gloo::transport { class Device; class UnboundBuffer; }
