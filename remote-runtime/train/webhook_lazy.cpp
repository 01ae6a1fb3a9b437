// ferry_webhook_lazy: webhook_post.cpp built for the helper, which loads libcurl on the first POST
// instead of at every start (webhook_post.cpp says why).
#define FERRY_CURL_DLOPEN 1
#include "remote-runtime/train/webhook_post.cpp"
