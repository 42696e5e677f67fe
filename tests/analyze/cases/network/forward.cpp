#include <sys/socket.h>  // expect: [include]
#include <netdb.h>  // expect: [include]

#include <kb/solution.h>

KB_FORWARD(ctx) {
  int s = socket(AF_INET, SOCK_STREAM, 0);  // expect: [network]
  addrinfo* info = nullptr;
  getaddrinfo("example.com", "80", nullptr, &info);  // expect: [network]
  (void)s;
}
