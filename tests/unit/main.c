/* CUnit runner for the pure parts: node sets, trees, the wire codec. */
#include <CUnit/Basic.h>

#include "suites.h"

int main(void)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	add_nodeset_suite();
	add_tree_suite();
	add_wire_suite();
	add_config_suite();
	add_cli_suite();
	add_matrix_suite();
	add_ckpt_image_suite();
	add_ckpt_files_suite();
	add_bcs_suite();
	add_db_suite();
	add_auth_suite();
	add_evloop_suite();
	add_fault_suite();
	add_rtguard_suite();
	add_slurmopt_suite();
	add_pmi_suite();
	add_kswitch_suite();
	add_boot_suite();
	add_ahead_suite();
	add_caw_suite();
	add_sigchld_suite();
	add_bell_suite();
	add_spinlock_suite();
	add_layout_suite();
	add_mbox_seq_suite();
	add_log_suite();
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
