// Shim: see ../../README.md.
#pragma once
