// Shim: see ../README.md.
#pragma once
namespace gloo { class Algorithm; }
