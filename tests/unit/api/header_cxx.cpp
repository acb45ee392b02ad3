// The public header compiles alone as C++ (tests/unit/api).
#include <weft/weft.h>

int main()
{
	weft_status_t st = WEFT_OK;
	weft_dtype_t dt = WEFT_BFLOAT16;
	weft_op_t op = WEFT_AVG;
	return (st == WEFT_OK && dt == WEFT_BFLOAT16 && op == WEFT_AVG) ? 0 : 1;
}
