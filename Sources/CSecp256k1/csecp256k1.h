// libsecp256k1 (Debian libsecp256k1-dev, built with the extrakeys, schnorrsig and ecdh modules).
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <secp256k1_ecdh.h>
