#include "core/hash.h"

#include <gtest/gtest.h>

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(kb::sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(kb::sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  kb::Sha256 h;
  h.update("a");
  h.update("bc");
  EXPECT_EQ(h.hexDigest(), kb::sha256Hex("abc"));
}
