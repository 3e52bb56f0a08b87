// libqrencode (Debian libqrencode-dev), used only by the CLI to show bridges as a QR code.
#include <qrencode.h>
