/* The public header compiles alone as strict C11 (tests/unit/api). */
#include <weft/weft.h>

int main(void)
{
	weft_status_t st = WEFT_OK;
	return st == WEFT_OK && WEFT_ERR_NO_DEVICE < 0 && WEFT_INPROGRESS > 0 ? 0 : 1;
}
