// libqrencode (Debian libqrencode-dev), used only by BridgeQR to show bridges as a QR code.
#include <qrencode.h>
